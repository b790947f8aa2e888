// VJP rules of the collectives, as jax.lax defines them under jax.pmap: psum's is psum of the
// cotangent; all_gather's is psum_scatter of it along the gathered dimension, and psum_scatter's
// all_gather of it (each other's transpose); axis_index has no operand. The rules bind the
// equation's own parameters (the axis's size), so a gradient compiles on any process that can
// run the forward program.
#include "trace/tracer.h"
#include "transforms/vjp_rules.h"

namespace ferry::transforms {
namespace {

using Ts = std::span<const Tensor>;
using Out = std::vector<Tensor>;

Tensor bind(Primitive p, ir::Params params, const Tensor& x) {
  return detail::current_tracer(primitive_name(p)).bind1(p, std::move(params), {x});
}

Out psum_vjp(const ir::Equation& eq, Ts, Ts, Ts g) { return {bind(Primitive::psum, eq.params, g[0])}; }
Out all_gather_vjp(const ir::Equation& eq, Ts, Ts, Ts g) { return {bind(Primitive::psum_scatter, eq.params, g[0])}; }
Out psum_scatter_vjp(const ir::Equation& eq, Ts, Ts, Ts g) { return {bind(Primitive::all_gather, eq.params, g[0])}; }
Out axis_index_vjp(const ir::Equation&, Ts, Ts, Ts) { return {}; }

}  // namespace

void register_collective_vjps(VjpTable& t) {
  set_vjp(t, Primitive::psum, psum_vjp);
  set_vjp(t, Primitive::all_gather, all_gather_vjp);
  set_vjp(t, Primitive::psum_scatter, psum_scatter_vjp);
  set_vjp(t, Primitive::axis_index, axis_index_vjp);
}

}  // namespace ferry::transforms
