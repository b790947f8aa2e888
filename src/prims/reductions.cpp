// Reductions over a set of axes (the output drops those axes: no keepdims in the IR), index
// reductions (argmax, argmin) over one axis, cumulative ones (cumsum, cummax, cummin) that keep
// the shape, and argsort (the positions that order each line).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "prims/families.h"
#include "prims/rule_helpers.h"

namespace ferry::prims {
namespace {

using detail::invalid;

std::vector<ir::Type> reduce_rule(std::span<const ir::Type> in, const ir::Params& params) {
  MemoryKind kind = detail::check_operands(in);
  const auto& axes = detail::params_as<ir::ReduceParams>(params).axes;
  const ir::Type& x = in[0];
  if (x.dtype == DType::boolean) invalid("not defined for bool operands");
  std::vector<bool> reduced(static_cast<size_t>(x.rank()), false);
  for (int64_t a : axes) {
    detail::check_axis(a, x.rank(), "axis");
    if (reduced[static_cast<size_t>(a)])
      invalid(fmt::format("axes {} lists axis {} twice", detail::dims_string(axes), a));
    reduced[static_cast<size_t>(a)] = true;
  }
  Shape out;
  for (size_t i = 0; i < reduced.size(); ++i)
    if (!reduced[i]) out.push_back(x.shape[i]);
  return {ir::Type{x.dtype, out, kind}};
}

// One flop (add or max) per input element.
Cost reduce_cost(std::span<const ir::Type> in, std::span<const ir::Type> out, const ir::Params&) {
  return Cost{.flops = static_cast<double>(detail::elements_of(in)), .bytes_read = detail::bytes_of(in),
              .bytes_written = detail::bytes_of(out)};
}

// argmax/argmin: i32 index along a non-empty axis (an empty one has no first maximum).
std::vector<ir::Type> arg_reduce_rule(std::span<const ir::Type> in, const ir::Params& params) {
  MemoryKind kind = detail::check_operands(in);
  int64_t axis = detail::params_as<ir::ArgReduceParams>(params).axis;
  const ir::Type& x = in[0];
  if (x.dtype == DType::boolean) invalid("not defined for bool operands");
  detail::check_axis(axis, x.rank(), "axis");
  if (x.shape[static_cast<size_t>(axis)] == 0) invalid(fmt::format("axis {} has size 0", axis));
  Shape out = x.shape;
  out.erase(out.begin() + axis);
  return {ir::Type{DType::i32, out, kind}};
}

std::vector<ir::Type> cumulative_rule(std::span<const ir::Type> in, const ir::Params& params) {
  detail::check_operands(in);
  int64_t axis = detail::params_as<ir::CumulativeParams>(params).axis;
  if (in[0].dtype == DType::boolean) invalid("not defined for bool operands");
  detail::check_axis(axis, in[0].rank(), "axis");
  return {in[0]};
}

// argsort: the i32 positions, one per element, along any axis of any dtype (bool and i32 too).
std::vector<ir::Type> argsort_rule(std::span<const ir::Type> in, const ir::Params& params) {
  MemoryKind kind = detail::check_operands(in);
  detail::check_axis(detail::params_as<ir::SortParams>(params).axis, in[0].rank(), "axis");
  return {ir::Type{DType::i32, in[0].shape, kind}};
}

// A comparison sort: about n log2 n comparisons per line of n.
Cost argsort_cost(std::span<const ir::Type> in, std::span<const ir::Type> out, const ir::Params& params) {
  const ir::Type& x = in[0];
  const double n = static_cast<double>(x.shape[static_cast<size_t>(detail::params_as<ir::SortParams>(params).axis)]);
  return Cost{.flops = static_cast<double>(x.num_elements()) * std::max(1.0, std::log2(std::max(n, 1.0))),
              .bytes_read = detail::bytes_of(in), .bytes_written = detail::bytes_of(out)};
}

}  // namespace

void register_reductions(Table& t) {
  for (Primitive p : {Primitive::reduce_sum, Primitive::reduce_max, Primitive::reduce_min})
    set_rules(t, p, reduce_rule, reduce_cost);
  for (Primitive p : {Primitive::argmax, Primitive::argmin}) set_rules(t, p, arg_reduce_rule, reduce_cost);
  // A running combination reads each element once and writes it once (the kernel may run in place).
  for (Primitive p : {Primitive::cumsum, Primitive::cummax, Primitive::cummin}) set_rules(t, p, cumulative_rule, reduce_cost);
  set_rules(t, Primitive::argsort, argsort_rule, argsort_cost);
}

}  // namespace ferry::prims
