// The collectives of ferry/distributed.h: front ends that check the axis name, fill in its size
// and bind the primitives (prims/collectives.cpp has their shape rules).
#include <fmt/format.h>

#include "ferry/distributed.h"
#include "ferry/error.h"
#include "trace/process_axis.h"
#include "trace/tracer.h"

namespace ferry {
namespace {

detail::Tracer& tracer_of(const Tensor& x, std::string_view op) {
  if (!x.defined()) throw Error(ErrorCode::invalid_argument, fmt::format("{}: the operand is an undefined Tensor", op));
  return detail::current_tracer(op);
}

}  // namespace

Tensor psum(const Tensor& x, const std::string& axis_name) {
  detail::Tracer& t = tracer_of(x, "psum");
  return t.bind1(Primitive::psum, ir::CollectiveParams{detail::process_axis(axis_name, "psum").size}, {x});
}

std::vector<Tensor> psum(const std::vector<Tensor>& xs, const std::string& axis_name) {
  std::vector<Tensor> out;
  for (const Tensor& x : xs) out.push_back(psum(x, axis_name));
  return out;
}

Tensor pmean(const Tensor& x, const std::string& axis_name) {
  tracer_of(x, "pmean");
  if (!is_floating(x.dtype()))
    throw Error(ErrorCode::invalid_argument,
                fmt::format("pmean: {} is not floating-point (convert it, or use psum)", x.type_string()));
  const int64_t n = detail::process_axis(axis_name, "pmean").size;
  return psum(x, axis_name) * (1.0 / static_cast<double>(n));
}

std::vector<Tensor> pmean(const std::vector<Tensor>& xs, const std::string& axis_name) {
  std::vector<Tensor> out;
  for (const Tensor& x : xs) out.push_back(pmean(x, axis_name));
  return out;
}

Tensor all_gather(const Tensor& x, const std::string& axis_name, int64_t axis, bool tiled) {
  detail::Tracer& t = tracer_of(x, "all_gather");
  const int64_t n = detail::process_axis(axis_name, "all_gather").size;
  const int64_t rank = x.rank() + (tiled ? 0 : 1);  // the axis indexes the result
  if (axis < -rank || axis >= rank)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("all_gather: axis {} is out of range for {} ({})", axis, x.type_string(),
                            tiled ? "tiled: an existing dimension" : "a new dimension of the result"));
  if (axis < 0) axis += rank;
  return t.bind1(Primitive::all_gather, ir::CollectiveDimParams{n, axis, tiled}, {x});
}

Tensor psum_scatter(const Tensor& x, const std::string& axis_name, int64_t scatter_dimension, bool tiled) {
  detail::Tracer& t = tracer_of(x, "psum_scatter");
  const int64_t n = detail::process_axis(axis_name, "psum_scatter").size;
  if (scatter_dimension < -x.rank() || scatter_dimension >= x.rank())
    throw Error(ErrorCode::invalid_argument, fmt::format("psum_scatter: scatter_dimension {} is out of range for {}",
                                                         scatter_dimension, x.type_string()));
  if (scatter_dimension < 0) scatter_dimension += x.rank();
  return t.bind1(Primitive::psum_scatter, ir::CollectiveDimParams{n, scatter_dimension, tiled}, {x});
}

Tensor axis_index(const std::string& axis_name) {
  detail::Tracer& t = detail::current_tracer("axis_index");
  return t.bind1(Primitive::axis_index, ir::CollectiveParams{detail::process_axis(axis_name, "axis_index").size}, {});
}

}  // namespace ferry
