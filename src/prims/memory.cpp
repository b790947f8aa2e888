// device_put: a copy of a value into another memory kind (possibly the same one).
#include "prims/families.h"
#include "prims/rule_helpers.h"

namespace ferry::prims {
namespace {

std::vector<ir::Type> device_put_rule(std::span<const ir::Type> in, const ir::Params& params) {
  detail::check_operands(in);
  ir::Type out = in[0];
  out.kind = detail::params_as<ir::DevicePutParams>(params).dst;
  return {out};
}

}  // namespace

void register_memory(Table& t) {
  // The cost is the copy's traffic; the link time it takes is the cost model's business.
  t[static_cast<size_t>(Primitive::device_put)] =
      PrimitiveInfo{.shape_rule = device_put_rule,
                    .cost_rule = detail::movement_cost};
}

}  // namespace ferry::prims
