#include "compiler/lower_collectives.h"

#include <optional>
#include <vector>

#include "compiler/pass_util.h"

namespace ferry::compiler {
namespace {

// The asynchronous start of eq's collective, or nothing where it stays synchronous.
std::optional<Primitive> start_of(const ir::Program& p, const ir::Equation& eq) {
  if (eq.prim == Primitive::psum) return ir::op::psum_start;
  if (eq.prim != Primitive::all_gather && eq.prim != Primitive::psum_scatter) return std::nullopt;
  const auto& params = std::get<ir::CollectiveDimParams>(eq.params);
  const Shape& s = p.type(eq.inputs[0]).shape;
  for (int64_t d = 0; d < params.dimension; ++d)
    if (s[static_cast<size_t>(d)] != 1) return std::nullopt;  // parts interleaved: a workspace rearranges them
  return eq.prim == Primitive::all_gather ? ir::op::all_gather_start : ir::op::psum_scatter_start;
}

}  // namespace

bool lower_collectives(ir::Program& program) {
  bool changed = run_on_bodies(program, lower_collectives);
  std::vector<ir::Equation> out;
  out.reserve(program.equations.size());
  for (ir::Equation& eq : program.equations) {
    std::optional<Primitive> start_prim = start_of(program, eq);
    if (!start_prim) {
      out.push_back(std::move(eq));
      continue;
    }
    append_async_pair(program, eq, *start_prim, ir::op::collective_done, out);
    changed = true;
  }
  program.equations = std::move(out);
  return changed;
}

}  // namespace ferry::compiler
