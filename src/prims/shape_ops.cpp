// Shape primitives: iota and constant (values without operands, always on the device),
// broadcast_in_dim, reshape and transpose. None of them computes anything: their cost is the bytes
// they move, with no flops.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "prims/families.h"
#include "prims/rule_helpers.h"

namespace ferry::prims {
namespace {

using detail::check_axis;
using detail::check_operands;
using detail::checked_elements;
using detail::dims_string;
using detail::invalid;
using detail::params_as;

std::vector<ir::Type> iota_rule(std::span<const ir::Type> in, const ir::Params& params) {
  const auto& p = params_as<ir::IotaParams>(params);
  if (p.dtype == DType::boolean) invalid("dtype bool is not supported; use a numeric dtype");
  if (p.shape.empty()) invalid("shape must have rank >= 1, got []");
  checked_elements(p.shape, "shape", p.dtype);
  check_axis(p.dimension, static_cast<int64_t>(p.shape.size()), "dimension");
  return {ir::Type{p.dtype, p.shape, MemoryKind::device}};
}

std::vector<ir::Type> constant_rule(std::span<const ir::Type> in, const ir::Params& params) {
  const auto& p = params_as<ir::ConstantParams>(params);
  checked_elements(p.shape, "shape", p.dtype);
  if (std::string problem = ir::value_problem(p.value, p.dtype); !problem.empty()) invalid(problem);
  return {ir::Type{p.dtype, p.shape, MemoryKind::device}};
}

std::vector<ir::Type> broadcast_in_dim_rule(std::span<const ir::Type> in, const ir::Params& params) {
  MemoryKind kind = check_operands(in);
  const auto& p = params_as<ir::BroadcastInDimParams>(params);
  const ir::Type& x = in[0];
  checked_elements(p.shape, "shape", x.dtype);
  const auto& bd = p.broadcast_dimensions;
  if (static_cast<int64_t>(bd.size()) != x.rank())
    invalid(fmt::format("broadcast_dimensions {} must have one entry per operand dimension ({})", dims_string(bd),
                        x.rank()));
  int64_t out_rank = static_cast<int64_t>(p.shape.size());
  for (size_t i = 0; i < bd.size(); ++i) {
    check_axis(bd[i], out_rank, "broadcast dimension");
    if (i > 0 && bd[i] <= bd[i - 1])
      invalid(fmt::format("broadcast_dimensions {} must be strictly increasing", dims_string(bd)));
    int64_t from = x.shape[i], to = p.shape[static_cast<size_t>(bd[i])];
    if (from != 1 && from != to)
      invalid(fmt::format("operand dimension {} has size {}, which is neither 1 nor the target size {} of "
                          "dimension {} of {}",
                          i, from, to, bd[i], shape_string(p.shape)));
  }
  return {ir::Type{x.dtype, p.shape, kind}};
}

std::vector<ir::Type> reshape_rule(std::span<const ir::Type> in, const ir::Params& params) {
  MemoryKind kind = check_operands(in);
  const auto& p = params_as<ir::ReshapeParams>(params);
  const ir::Type& x = in[0];
  int64_t n = checked_elements(p.new_sizes, "new_sizes", x.dtype);
  if (n != x.num_elements())
    invalid(fmt::format("new_sizes {} has {} elements but the operand has {}", shape_string(p.new_sizes), n,
                        x.num_elements()));
  return {ir::Type{x.dtype, p.new_sizes, kind}};
}

std::vector<ir::Type> transpose_rule(std::span<const ir::Type> in, const ir::Params& params) {
  MemoryKind kind = check_operands(in);
  const auto& perm = params_as<ir::TransposeParams>(params).permutation;
  const ir::Type& x = in[0];
  if (static_cast<int64_t>(perm.size()) != x.rank())
    invalid(fmt::format("permutation {} must have one entry per operand dimension ({})", dims_string(perm), x.rank()));
  std::vector<bool> seen(perm.size(), false);
  Shape out(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    check_axis(perm[i], x.rank(), "permutation entry");
    if (seen[static_cast<size_t>(perm[i])])
      invalid(fmt::format("permutation {} lists dimension {} twice", dims_string(perm), perm[i]));
    seen[static_cast<size_t>(perm[i])] = true;
    out[i] = x.shape[static_cast<size_t>(perm[i])];
  }
  return {ir::Type{x.dtype, out, kind}};
}

}  // namespace

void register_shape_ops(Table& t) {
  using P = Primitive;
  // iota and constant read nothing: movement_cost over zero inputs counts only the bytes written.
  set_rules(t, P::iota, iota_rule, detail::movement_cost);
  set_rules(t, P::constant, constant_rule, detail::movement_cost);
  set_rules(t, P::broadcast_in_dim, broadcast_in_dim_rule, detail::movement_cost);
  // The same bytes in the same order: where its operand dies here, the result takes its buffer
  // (ops.def) and the kernel has nothing to move.
  set_rules(t, P::reshape, reshape_rule, detail::movement_cost);
  set_rules(t, P::transpose, transpose_rule, detail::movement_cost);
}

}  // namespace ferry::prims
