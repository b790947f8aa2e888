// Collectives over the axis of all processes (ferry/distributed.h), with the shapes jax.lax gives
// them: psum keeps its operand's type; all_gather stacks the processes' operands along a new
// dimension (or, tiled, concatenates them along an existing one); psum_scatter sums and keeps this
// process's part along a dimension (the axis's size there, which goes, or, tiled, a multiple of it,
// which is divided); axis_index is this process's index, an i32 scalar.
//
// The compiler's asynchronous form of the three that exchange data (compiler/lower_collectives.h):
// <collective>_start(x) has the collective's rule and defines the result's buffer;
// collective_done(started, x) waits and yields that buffer; it reads x so that x stays alive and
// unchanged while the exchange is in flight.
#include <fmt/format.h>

#include "prims/families.h"
#include "prims/rule_helpers.h"

namespace ferry::prims {
namespace {

using detail::invalid;

void check_axis_size(int64_t n) {
  if (n < 1) invalid(fmt::format("axis_size {} is not a process count (at least 1)", n));
}

void check_summable(const ir::Type& x) {
  if (x.dtype == DType::boolean) invalid("not defined for bool operands (convert to i32 to count)");
}

std::vector<ir::Type> psum_rule(std::span<const ir::Type> in, const ir::Params& params) {
  detail::check_operands(in);
  check_axis_size(detail::params_as<ir::CollectiveParams>(params).axis_size);
  check_summable(in[0]);
  return {in[0]};
}

std::vector<ir::Type> all_gather_rule(std::span<const ir::Type> in, const ir::Params& params) {
  MemoryKind kind = detail::check_operands(in);
  const auto& p = detail::params_as<ir::CollectiveDimParams>(params);
  check_axis_size(p.axis_size);
  Shape s = in[0].shape;
  if (p.tiled) {
    detail::check_axis(p.dimension, in[0].rank(), "dimension");
    s[static_cast<size_t>(p.dimension)] *= p.axis_size;
  } else {
    if (p.dimension < 0 || p.dimension > in[0].rank())
      invalid(fmt::format("dimension {} out of range for a new axis of rank {}", p.dimension, in[0].rank() + 1));
    s.insert(s.begin() + p.dimension, p.axis_size);
  }
  detail::checked_elements(s, "result shape", in[0].dtype);
  return {ir::Type{in[0].dtype, s, kind}};
}

std::vector<ir::Type> psum_scatter_rule(std::span<const ir::Type> in, const ir::Params& params) {
  MemoryKind kind = detail::check_operands(in);
  const auto& p = detail::params_as<ir::CollectiveDimParams>(params);
  check_axis_size(p.axis_size);
  check_summable(in[0]);
  detail::check_axis(p.dimension, in[0].rank(), "scatter_dimension");
  Shape s = in[0].shape;
  const int64_t d = s[static_cast<size_t>(p.dimension)];
  if (p.tiled) {
    if (d % p.axis_size != 0)
      invalid(fmt::format("scatter_dimension {} has size {}, not a multiple of the axis size {}", p.dimension, d,
                          p.axis_size));
    s[static_cast<size_t>(p.dimension)] = d / p.axis_size;
  } else {
    if (d != p.axis_size)
      invalid(fmt::format("scatter_dimension {} has size {}, not the axis size {} (tiled=true splits a multiple)",
                          p.dimension, d, p.axis_size));
    s.erase(s.begin() + p.dimension);
  }
  return {ir::Type{in[0].dtype, s, kind}};
}

std::vector<ir::Type> axis_index_rule(std::span<const ir::Type> in, const ir::Params& params) {
  detail::check_operands(in);
  check_axis_size(detail::params_as<ir::CollectiveParams>(params).axis_size);
  return {ir::Type{DType::i32, {}, MemoryKind::device}};
}

std::vector<ir::Type> collective_done_rule(std::span<const ir::Type> in, const ir::Params&) {
  return {in[0]};
}

Cost done_cost(std::span<const ir::Type>, std::span<const ir::Type>, const ir::Params&) { return {}; }

// One add per operand element and peer (an all-gather's are none of its business, but it is data
// movement either way), the operand read and the result written. The link time the exchange takes
// is the cost model's business (compiler/step_time.h).
Cost collective_cost(std::span<const ir::Type> in, std::span<const ir::Type> out, const ir::Params& params) {
  Cost c;
  if (in.empty()) return Cost{.bytes_written = detail::bytes_of(out)};
  const int64_t n = std::holds_alternative<ir::CollectiveParams>(params)
                        ? std::get<ir::CollectiveParams>(params).axis_size
                        : std::get<ir::CollectiveDimParams>(params).axis_size;
  c.flops = static_cast<double>(detail::elements_of(in)) * static_cast<double>(n - 1);
  c.bytes_read = detail::bytes_of(in);
  c.bytes_written = detail::bytes_of(out);
  return c;
}

}  // namespace

void register_collectives(Table& t) {
  set_rules(t, Primitive::psum, psum_rule, collective_cost);
  set_rules(t, Primitive::all_gather, all_gather_rule, collective_cost);
  set_rules(t, Primitive::psum_scatter, psum_scatter_rule, collective_cost);
  set_rules(t, Primitive::axis_index, axis_index_rule, collective_cost);
  set_rules(t, ir::op::psum_start, psum_rule, collective_cost);
  set_rules(t, ir::op::all_gather_start, all_gather_rule, collective_cost);
  set_rules(t, ir::op::psum_scatter_start, psum_scatter_rule, collective_cost);
  set_rules(t, ir::op::collective_done, collective_done_rule, done_cost);
}

}  // namespace ferry::prims
