#include "transforms/vjp_rules.h"

namespace ferry::transforms {
namespace {

VjpTable build() {
  VjpTable t{};
  register_elementwise_vjps(t);
  register_structural_vjps(t);
  register_model_vjps(t);
  register_collective_vjps(t);
  return t;
}

}  // namespace

VjpRule vjp_rule(Primitive p) {
  static const VjpTable table = build();
  return table.at(static_cast<size_t>(p));
}

}  // namespace ferry::transforms
