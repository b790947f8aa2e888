// copy_start / copy_done: the asynchronous form of a device_put between memory kinds, made by the
// compiler (lower_copies) after differentiation. copy_start[dst](x) defines the destination buffer
// and starts filling it; copy_done(dest, x) waits for the copy and yields the destination (the same
// buffer). copy_done reads x too, so x stays alive (and unchanged) while the copy is in flight.
#include <fmt/format.h>

#include "prims/families.h"
#include "prims/rule_helpers.h"

namespace ferry::prims {
namespace {

std::vector<ir::Type> copy_start_rule(std::span<const ir::Type> in, const ir::Params& params) {
  detail::check_operands(in);
  ir::Type out = in[0];
  out.kind = detail::params_as<ir::DevicePutParams>(params).dst;
  if (out.kind == in[0].kind) detail::invalid("copies within one memory kind are not asynchronous; use device_put");
  return {out};
}

std::vector<ir::Type> copy_done_rule(std::span<const ir::Type> in, const ir::Params&) {
  // The operands live in two kinds by design, so check_operands (one shared kind) does not apply.
  if (in[0].dtype != in[1].dtype || in[0].shape != in[1].shape)
    detail::invalid(fmt::format("the destination {} and the source {} differ", ir::to_string(in[0]), ir::to_string(in[1])));
  return {in[0]};
}

// The traffic of the copy is the cost: no flops.
Cost copy_start_cost(std::span<const ir::Type> in, std::span<const ir::Type> out, const ir::Params&) {
  return Cost{0, detail::bytes_of(in), detail::bytes_of(out)};
}
Cost copy_done_cost(std::span<const ir::Type>, std::span<const ir::Type>, const ir::Params&) { return {}; }

}  // namespace

void register_copies(Table& t) {
  t[static_cast<size_t>(ir::op::copy_start)] =
      PrimitiveInfo{.shape_rule = copy_start_rule, .cost_rule = copy_start_cost};
  t[static_cast<size_t>(ir::op::copy_done)] =
      PrimitiveInfo{.shape_rule = copy_done_rule, .cost_rule = copy_done_cost};  // always: it yields the buffer its copy_start filled
}

}  // namespace ferry::prims
