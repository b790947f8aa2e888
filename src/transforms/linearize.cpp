#include "transforms/linearize.h"

#include <fmt/format.h>

#include "ir/dce.h"
#include "ferry/error.h"
#include "trace/tracer.h"
#include "transforms/emit.h"
#include "transforms/vjp_rules.h"

namespace ferry::transforms {

namespace {
// Equations emitted on behalf of `eq` (its replay, or its VJP rule's work) inherit its checkpoint
// decision, so a policy covers the values differentiation adds (e.g. cos(x) for sin).
void inherit_decision(detail::Tracer& tracer, size_t first, const ir::Equation& eq) {
  if (eq.decision.kind == ir::RematDecision::Kind::none) return;
  for (size_t i = first; i < tracer.num_equations(); ++i)
    if (tracer.equation(i).decision.kind == ir::RematDecision::Kind::none) tracer.equation(i).decision = eq.decision;
}
}  // namespace

const ControlFlowVjp* control_flow_vjp(Primitive p) {
  if (p == Primitive::scan) return &kScanVjp;
  if (p == Primitive::checkpoint) return &kCheckpointVjp;
  if (p == Primitive::custom_vjp) return &kCustomVjpVjp;
  if (p == Primitive::cond) return &kCondVjp;
  return nullptr;
}

ClosedProgram trace_joint(const std::shared_ptr<const ir::Program>& body, const std::string& name) {
  std::vector<ir::Type> types;
  for (ir::ValueId v : body->inputs) types.push_back(body->type(v));
  for (ir::ValueId v : body->outputs) types.push_back(body->type(v));
  const size_t n_in = body->inputs.size();
  ClosedProgram joint = trace_closed(name, types, [&](const std::vector<Tensor>& jin) {
    std::vector<Tensor> primals(jin.begin(), jin.begin() + static_cast<std::ptrdiff_t>(n_in));
    std::vector<Tensor> cts(jin.begin() + static_cast<std::ptrdiff_t>(n_in), jin.end());
    Linearization lin(body, primals);
    std::vector<Tensor> out = lin.outputs();
    std::vector<Tensor> in_cts = lin.backward(cts);
    for (size_t j = 0; j < n_in; ++j) out.push_back(in_cts[j].defined() ? in_cts[j] : zeros_like(primals[j]));
    return out;
  });
  if (!joint.captures.empty()) throw Error(ErrorCode::internal, fmt::format("{}: the joint body captured outer values", name));
  // VJP rules also emit cotangents of operands nothing differentiates (mul's for a constant reads
  // the other operand): left in, they would make partition keep values only they read, e.g. a
  // scan stacking a residual its backward body never reads.
  auto live = std::make_shared<ir::Program>(*joint.program);
  ir::eliminate_dead_code(*live);
  joint.program = std::move(live);
  return joint;
}

Tensor add_cotangents(const Tensor& a, const Tensor& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return add(a, b);
}

Linearization::Linearization(std::shared_ptr<const ir::Program> program, std::vector<Tensor> inputs)
    : program_(std::move(program)), inputs_(std::move(inputs)) {
  const ir::Program& p = *program_;
  env_.resize(p.values.size());
  residuals_.resize(p.equations.size());
  for (size_t i = 0; i < inputs_.size(); ++i) env_[static_cast<size_t>(p.inputs[i])] = inputs_[i];
  active_.assign(p.values.size(), 0);
  for (ir::ValueId v : p.inputs) active_[static_cast<size_t>(v)] = is_floating(p.type(v).dtype);
  for (const ir::Equation& eq : p.equations) {
    if (eq.prim == Primitive::stop_gradient) continue;
    bool any = false;
    for (ir::ValueId v : eq.inputs) any = any || active_[static_cast<size_t>(v)];
    for (ir::ValueId v : eq.outputs) active_[static_cast<size_t>(v)] = any;
  }
  detail::Tracer& tracer = detail::current_tracer(p.name);
  for (size_t e = 0; e < p.equations.size(); ++e) {
    const ir::Equation& eq = p.equations[e];
    std::vector<Tensor> in;
    for (ir::ValueId v : eq.inputs) in.push_back(env_[static_cast<size_t>(v)]);
    std::vector<Tensor> out;
    size_t first = tracer.num_equations();
    if (const ControlFlowVjp* cf = control_flow_vjp(eq.prim)) {
      out = cf->forward(eq, in, residuals_[e]);
    } else {
      out = replay(eq, in);
    }
    inherit_decision(tracer, first, eq);
    for (size_t i = 0; i < out.size(); ++i) env_[static_cast<size_t>(eq.outputs[i])] = out[i];
  }
  for (ir::ValueId v : p.outputs) outputs_.push_back(env_[static_cast<size_t>(v)]);
}

std::vector<Tensor> Linearization::backward(const std::vector<Tensor>& output_cotangents) const {
  const ir::Program& p = *program_;
  if (output_cotangents.size() != p.outputs.size())
    throw Error(ErrorCode::internal, fmt::format("backward: {} cotangents for {} outputs", output_cotangents.size(),
                                                 p.outputs.size()));
  auto differentiable = [&](ir::ValueId v) { return is_floating(p.type(v).dtype); };
  std::vector<Tensor> ct(p.values.size());
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    const Tensor& c = output_cotangents[i];
    if (!c.defined() || !differentiable(p.outputs[i])) continue;
    if (type_of(c) != p.type(p.outputs[i]))
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("cotangent {} is {} but the output is {}", i, c.type_string(), ir::to_string(p.type(p.outputs[i]))));
    ct[static_cast<size_t>(p.outputs[i])] = add_cotangents(ct[static_cast<size_t>(p.outputs[i])], c);
  }
  for (size_t e = p.equations.size(); e-- > 0;) {
    const ir::Equation& eq = p.equations[e];
    std::vector<Tensor> cts_out;
    bool any = false;
    for (ir::ValueId v : eq.outputs) {
      cts_out.push_back(ct[static_cast<size_t>(v)]);
      any = any || cts_out.back().defined();
    }
    bool active_input = false;
    for (ir::ValueId v : eq.inputs) active_input = active_input || active_[static_cast<size_t>(v)];
    if (!any || !active_input) continue;
    std::vector<Tensor> cts_in;
    detail::Tracer& tracer = detail::current_tracer(p.name);
    size_t first = tracer.num_equations();
    if (const ControlFlowVjp* cf = control_flow_vjp(eq.prim)) {
      cts_in = cf->backward(eq, residuals_[e], cts_out);
    } else {
      const VjpRule rule = vjp_rule(eq.prim);
      if (rule == nullptr) throw Error(ErrorCode::unimplemented, fmt::format("{} has no VJP rule", primitive_name(eq.prim)));
      std::vector<Tensor> in, out;
      for (ir::ValueId v : eq.inputs) in.push_back(env_[static_cast<size_t>(v)]);
      for (ir::ValueId v : eq.outputs) out.push_back(env_[static_cast<size_t>(v)]);
      cts_in = rule(eq, in, out, cts_out);
    }
    inherit_decision(tracer, first, eq);
    if (cts_in.size() != eq.inputs.size())
      throw Error(ErrorCode::internal, fmt::format("the VJP of {} gave {} cotangents for {} inputs",
                                                   primitive_name(eq.prim), cts_in.size(), eq.inputs.size()));
    for (size_t i = 0; i < eq.inputs.size(); ++i) {
      ir::ValueId v = eq.inputs[i];
      if (!cts_in[i].defined() || !differentiable(v)) continue;
      if (type_of(cts_in[i]) != p.type(v))
        throw Error(ErrorCode::internal, fmt::format("the VJP of {} gave a {} cotangent for a {} input",
                                                     primitive_name(eq.prim), cts_in[i].type_string(), ir::to_string(p.type(v))));
      ct[static_cast<size_t>(v)] = add_cotangents(ct[static_cast<size_t>(v)], cts_in[i]);
    }
  }
  std::vector<Tensor> result;
  for (ir::ValueId v : p.inputs) result.push_back(differentiable(v) ? ct[static_cast<size_t>(v)] : Tensor());
  return result;
}

}  // namespace ferry::transforms
