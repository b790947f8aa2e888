#include "compiler/fold_transposes.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "compiler/pass_util.h"
#include "prims/dot_layout.h"

namespace ferry::compiler {
namespace {

// One operand of a dot_general, as its dimension numbers name it.
struct OperandDims {
  ir::Dims batch, contracting;
};

OperandDims operand_dims(const ir::DotDimensionNumbers& dn, size_t side) {
  return side == 0 ? OperandDims{dn.lhs_batch, dn.lhs_contracting} : OperandDims{dn.rhs_batch, dn.rhs_contracting};
}

ir::Dims free_dims(size_t rank, const OperandDims& d) {
  ir::Dims f;
  for (int64_t k = 0; k < static_cast<int64_t>(rank); ++k)
    if (std::find(d.batch.begin(), d.batch.end(), k) == d.batch.end() &&
        std::find(d.contracting.begin(), d.contracting.end(), k) == d.contracting.end())
      f.push_back(k);
  return f;
}

// The dimension numbers of operand `side` rewritten to read the transpose's operand (shape `src`)
// through `perm` (result dimension d is operand dimension perm[d]); nullopt when the free
// dimensions would change order or the kernel could not read the operand in place.
std::optional<OperandDims> folded(const ir::DotDimensionNumbers& dn, size_t side, const ir::Dims& perm,
                                  const Shape& src) {
  const OperandDims before = operand_dims(dn, side);
  for (int64_t d : before.batch)
    if (d < 0 || d >= static_cast<int64_t>(perm.size())) return std::nullopt;
  for (int64_t d : before.contracting)
    if (d < 0 || d >= static_cast<int64_t>(perm.size())) return std::nullopt;
  auto map = [&](const ir::Dims& ds) {
    ir::Dims out;
    for (int64_t d : ds) out.push_back(perm[static_cast<size_t>(d)]);
    return out;
  };
  const OperandDims after{map(before.batch), map(before.contracting)};
  const ir::Dims moved_free = map(free_dims(perm.size(), before));
  if (!std::is_sorted(moved_free.begin(), moved_free.end())) return std::nullopt;
  // lhs is [M, K] (rows: free), rhs [K, N] (rows: contracting).
  const bool in_place = side == 0 ? prims::matrix_layout(src, after.batch, moved_free, after.contracting).has_value()
                                  : prims::matrix_layout(src, after.batch, after.contracting, moved_free).has_value();
  if (!in_place) return std::nullopt;
  return after;
}

bool fold_region(ir::Program& program) {
  bool changed = run_on_bodies(program, fold_region);
  const size_t nv = program.values.size();
  std::vector<int> producer(nv, -1);
  for (size_t e = 0; e < program.equations.size(); ++e)
    for (ir::ValueId v : program.equations[e].outputs) producer[static_cast<size_t>(v)] = static_cast<int>(e);

  // A transpose folds when every read of its result is a dot_general operand that can take it.
  std::vector<bool> foldable(nv, true);
  for (ir::ValueId v : program.outputs) foldable[static_cast<size_t>(v)] = false;
  for (const ir::Equation& eq : program.equations)
    for (size_t side = 0; side < eq.inputs.size(); ++side) {
      const auto v = static_cast<size_t>(eq.inputs[side]);
      const int t = producer[v];
      if (t < 0 || program.equations[static_cast<size_t>(t)].prim != Primitive::transpose) continue;
      const ir::Equation& tr = program.equations[static_cast<size_t>(t)];
      if (eq.prim != Primitive::dot_general || side > 1 ||
          !folded(std::get<ir::DotGeneralParams>(eq.params).dims, side,
                  std::get<ir::TransposeParams>(tr.params).permutation, program.type(tr.inputs[0]).shape))
        foldable[v] = false;
    }

  std::vector<bool> remove(program.equations.size(), false);
  for (ir::Equation& eq : program.equations) {
    if (eq.prim != Primitive::dot_general) continue;
    for (size_t side = 0; side < 2; ++side) {
      const auto v = static_cast<size_t>(eq.inputs[side]);
      const int t = producer[v];
      if (t < 0 || program.equations[static_cast<size_t>(t)].prim != Primitive::transpose || !foldable[v]) continue;
      const ir::Equation& tr = program.equations[static_cast<size_t>(t)];
      auto& dn = std::get<ir::DotGeneralParams>(eq.params).dims;
      const auto after = folded(dn, side, std::get<ir::TransposeParams>(tr.params).permutation,
                                program.type(tr.inputs[0]).shape);
      (side == 0 ? dn.lhs_batch : dn.rhs_batch) = after->batch;
      (side == 0 ? dn.lhs_contracting : dn.rhs_contracting) = after->contracting;
      eq.inputs[side] = tr.inputs[0];
      remove[static_cast<size_t>(t)] = true;
      changed = true;
    }
  }
  if (std::find(remove.begin(), remove.end(), true) != remove.end()) {
    std::vector<ir::Equation> kept;
    kept.reserve(program.equations.size());
    for (size_t e = 0; e < program.equations.size(); ++e)
      if (!remove[e]) kept.push_back(std::move(program.equations[e]));
    program.equations = std::move(kept);
  }
  return changed;
}

}  // namespace

bool fold_transposes(ir::Program& program) { return fold_region(program); }

}  // namespace ferry::compiler
