// fused(operands...) with one body (prims/fused_body.h): computes the body in one loop without
// materializing its intermediates. Made by compiler/fuse.h after differentiation and planning, so
// it has no VJP rule.
#include <fmt/format.h>

#include "prims/families.h"
#include "prims/fused_body.h"
#include "prims/rule_helpers.h"

namespace ferry::prims {
namespace {

std::vector<ir::Type> fused_rule(std::span<const ir::Type> in, const ir::Params&,
                                 std::span<const std::shared_ptr<const ir::Program>> bodies) {
  if (bodies.size() != 1 || bodies[0] == nullptr) detail::invalid(fmt::format("needs one body, got {}", bodies.size()));
  const ir::Program& body = *bodies[0];
  if (body.inputs.size() != in.size())
    detail::invalid(fmt::format("the body takes {} inputs but the equation has {} operands", body.inputs.size(), in.size()));
  for (size_t i = 0; i < in.size(); ++i)
    if (body.type(body.inputs[i]) != in[i])
      detail::invalid(fmt::format("body input {} is {} but the operand is {}", i, ir::to_string(body.type(body.inputs[i])),
                                  ir::to_string(in[i])));
  if (body.outputs.empty()) detail::invalid("the body returns nothing");
  fused_layout(body);
  std::vector<ir::Type> out;
  for (ir::ValueId v : body.outputs) out.push_back(body.type(v));
  return out;
}

// The work (flops, transcendentals) of the body's equations, the memory traffic of the equation
// alone: its intermediates stay in the kernel's blocks.
Cost fused_cost(const ir::Equation& eq) {
  const ir::Program& body = *eq.subprograms.at(0);
  Cost c;
  for (const ir::Equation& e : body.equations) {
    const Cost op = cost(e, body);
    c.flops += op.flops;
    c.transcendentals += op.transcendentals;
  }
  for (ir::ValueId v : body.inputs) c.bytes_read += body.type(v).size_bytes();
  for (ir::ValueId v : body.outputs) c.bytes_written += body.type(v).size_bytes();
  return c;
}

}  // namespace

void register_fused(Table& t) {
  // In place: which operands a result may overwrite depends on the body (fused_in_place_inputs,
  // which compiler::in_place_candidates asks for fused equations), not on the primitive alone.
  t[static_cast<size_t>(ir::op::fused)] =
      PrimitiveInfo{.body_shape_rule = fused_rule, .body_cost_rule = fused_cost};
}

}  // namespace ferry::prims
