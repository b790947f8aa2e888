// Control flow and checkpointing: scan (a loop) and checkpoint (a function whose backward pass
// follows a policy), whose bodies decide their output types, and checkpoint_name (an identity).
#include <algorithm>

#include <fmt/format.h>

#include "prims/families.h"
#include "prims/rule_helpers.h"
#include "ferry/tensor.h"

namespace ferry::prims {
namespace {

std::vector<ir::Type> scan_rule(std::span<const ir::Type> in, const ir::Params& params,
                                std::span<const std::shared_ptr<const ir::Program>> bodies) {
  const auto& p = detail::params_as<ir::ScanParams>(params);
  if (bodies.size() != 1 || bodies[0] == nullptr) detail::invalid(fmt::format("needs one body, got {}", bodies.size()));
  const ir::Program& body = *bodies[0];
  if (p.length < 0 || p.num_carry < 0 || p.num_xs < 0 || p.num_carry + p.num_xs > static_cast<int64_t>(in.size()))
    detail::invalid(fmt::format("bad counts: length {}, num_carry {}, num_xs {} for {} operands", p.length, p.num_carry,
                                p.num_xs, in.size()));
  if (body.inputs.size() != in.size())
    detail::invalid(fmt::format("the body takes {} inputs but the scan has {} operands", body.inputs.size(), in.size()));
  const size_t nc = static_cast<size_t>(p.num_carry), nx = static_cast<size_t>(p.num_xs);
  for (size_t i = 0; i < in.size(); ++i) {
    ir::Type want = in[i];
    if (i >= nc && i < nc + nx) {
      if (want.rank() == 0 || want.shape[0] != p.length)
        detail::invalid(fmt::format("xs operand {} is {} but needs leading axis {}", i - nc, ir::to_string(want), p.length));
      want.shape.erase(want.shape.begin());
    }
    if (body.type(body.inputs[i]) != want)
      detail::invalid(fmt::format("body input {} is {} but the scan gives it {}", i, ir::to_string(body.type(body.inputs[i])),
                                  ir::to_string(want)));
  }
  if (body.outputs.size() < nc)
    detail::invalid(fmt::format("the body returns {} values, fewer than its {} carries", body.outputs.size(), nc));
  std::vector<ir::Type> out;
  for (size_t i = 0; i < body.outputs.size(); ++i) {
    ir::Type t = body.type(body.outputs[i]);
    if (i < nc) {
      if (t != in[i])
        detail::invalid(fmt::format("carry {} enters as {} but the body returns {}", i, ir::to_string(in[i]), ir::to_string(t)));
    } else {
      t.shape.insert(t.shape.begin(), p.length);
      detail::checked_elements(t.shape, "stacked ys", t.dtype);
    }
    out.push_back(t);
  }
  return out;
}

Cost scan_cost(const ir::Equation& eq) {
  const auto& p = detail::params_as<ir::ScanParams>(eq.params);
  return program_cost(*eq.subprograms.at(0)).scaled(static_cast<double>(p.length));
}

std::vector<ir::Type> checkpoint_rule(std::span<const ir::Type> in, const ir::Params&,
                                      std::span<const std::shared_ptr<const ir::Program>> bodies) {
  if (bodies.size() != 1 || bodies[0] == nullptr) detail::invalid(fmt::format("needs one body, got {}", bodies.size()));
  const ir::Program& body = *bodies[0];
  if (body.inputs.size() != in.size())
    detail::invalid(fmt::format("the body takes {} inputs but the checkpoint has {} operands", body.inputs.size(), in.size()));
  for (size_t i = 0; i < in.size(); ++i)
    if (body.type(body.inputs[i]) != in[i])
      detail::invalid(fmt::format("body input {} is {} but the operand is {}", i, ir::to_string(body.type(body.inputs[i])),
                                  ir::to_string(in[i])));
  std::vector<ir::Type> out;
  for (ir::ValueId v : body.outputs) out.push_back(body.type(v));
  return out;
}

Cost checkpoint_cost(const ir::Equation& eq) { return program_cost(*eq.subprograms.at(0)); }

std::vector<ir::Type> checkpoint_name_rule(std::span<const ir::Type> in, const ir::Params&) {
  detail::check_operands(in);
  return {in[0]};
}

// An identity costs nothing: the runtime may alias it.
Cost free_cost(std::span<const ir::Type>, std::span<const ir::Type>, const ir::Params&) { return {}; }

// The bodies take the operands' types (from operand `first` on).
void check_body_inputs(const ir::Program& body, std::span<const ir::Type> in, size_t first, std::string_view what) {
  if (body.inputs.size() != in.size() - first)
    detail::invalid(fmt::format("{} takes {} inputs but gets {} operands", what, body.inputs.size(), in.size() - first));
  for (size_t i = first; i < in.size(); ++i)
    if (body.type(body.inputs[i - first]) != in[i])
      detail::invalid(fmt::format("{} input {} is {} but the operand is {}", what, i - first,
                                  ir::to_string(body.type(body.inputs[i - first])), ir::to_string(in[i])));
}

std::vector<ir::Type> output_types(const ir::Program& body) {
  std::vector<ir::Type> out;
  for (ir::ValueId v : body.outputs) out.push_back(body.type(v));
  return out;
}

void check_bodies(std::span<const std::shared_ptr<const ir::Program>> bodies, size_t count) {
  if (bodies.size() != count) detail::invalid(fmt::format("needs {} bodies, got {}", count, bodies.size()));
  for (const auto& b : bodies)
    if (b == nullptr) detail::invalid("a body is missing");
}

// custom_vjp(operands...) with bodies f(operands) -> outputs, fwd(operands) -> (outputs...,
// residuals...) and bwd(residuals..., output cotangents...) -> one cotangent per operand.
std::vector<ir::Type> custom_vjp_rule(std::span<const ir::Type> in, const ir::Params&,
                                      std::span<const std::shared_ptr<const ir::Program>> bodies) {
  check_bodies(bodies, 3);
  const ir::Program &f = *bodies[0], &fwd = *bodies[1], &bwd = *bodies[2];
  check_body_inputs(f, in, 0, "f");
  check_body_inputs(fwd, in, 0, "fwd");
  std::vector<ir::Type> out = output_types(f), fwd_out = output_types(fwd);
  if (fwd_out.size() < out.size() || !std::equal(out.begin(), out.end(), fwd_out.begin()))
    detail::invalid("fwd must return f's outputs first, then the residuals");
  std::vector<ir::Type> bwd_in(fwd_out.begin() + static_cast<std::ptrdiff_t>(out.size()), fwd_out.end());
  bwd_in.insert(bwd_in.end(), out.begin(), out.end());
  check_body_inputs(bwd, bwd_in, 0, "bwd");
  std::vector<ir::Type> bwd_out = output_types(bwd);
  if (bwd_out.size() != in.size() || !std::equal(bwd_out.begin(), bwd_out.end(), in.begin()))
    detail::invalid("bwd must return one cotangent per operand, of the operand's type");
  return out;
}

Cost custom_vjp_cost(const ir::Equation& eq) { return program_cost(*eq.subprograms.at(0)); }

// cond(index, operands...) with one body per branch (branch 0 is lax.cond's false branch): runs the
// branch `index` names (an i32 clamped into range; a bool, 0 or 1, picks one of exactly two). The
// branches take the operands and return the same types.
std::vector<ir::Type> cond_rule(std::span<const ir::Type> in, const ir::Params&,
                                std::span<const std::shared_ptr<const ir::Program>> bodies) {
  if (bodies.empty()) detail::invalid("needs at least one branch");
  check_bodies(bodies, bodies.size());
  if (in.empty() || !in[0].shape.empty() || (in[0].dtype != DType::boolean && in[0].dtype != DType::i32))
    detail::invalid("the first operand must be a bool or i32 scalar that picks the branch");
  // A bool picks one of two (false, true): with one branch, true would run the false branch.
  if (in[0].dtype == DType::boolean && bodies.size() != 2)
    detail::invalid(fmt::format("a bool predicate picks one of two branches (false, then true), but {} given",
                                bodies.size() == 1 ? std::string("1 is") : fmt::format("{} are", bodies.size())));
  std::vector<ir::Type> out = output_types(*bodies[0]);
  for (size_t b = 0; b < bodies.size(); ++b) {
    check_body_inputs(*bodies[b], in, 1, fmt::format("branch {}", b));
    if (output_types(*bodies[b]) != out) detail::invalid(fmt::format("branch {} returns other types than branch 0", b));
  }
  return out;
}

// The most expensive branch.
Cost cond_cost(const ir::Equation& eq) {
  Cost worst;
  for (const auto& b : eq.subprograms) {
    Cost c = program_cost(*b);
    if (c.flops >= worst.flops) worst = c;
  }
  return worst;
}

// while_loop(pred, carry..., consts...) with body(carry..., consts...) -> (pred, carry...): while
// pred is true, runs the body (the body computes the next predicate itself, so the loop is one body
// like a scan's). Returns the final (pred, carry...).
std::vector<ir::Type> while_rule(std::span<const ir::Type> in, const ir::Params&,
                                 std::span<const std::shared_ptr<const ir::Program>> bodies) {
  check_bodies(bodies, 1);
  const ir::Program& body = *bodies[0];
  if (in.empty() || in[0] != ir::Type{DType::boolean, {}, in[0].kind})
    detail::invalid("the first operand must be the bool scalar predicate");
  check_body_inputs(body, in, 0, "body");
  std::vector<ir::Type> out = output_types(body);
  if (out.empty() || out.size() > in.size() || !std::equal(out.begin(), out.end(), in.begin()))
    detail::invalid("the body must return the predicate and the carries, of the operands' types");
  return out;
}

// One trip of the body: the trip count is not known before the loop runs.
Cost while_cost(const ir::Equation& eq) { return program_cost(*eq.subprograms.at(0)); }

}  // namespace

void register_control_flow(Table& t) {
  t[static_cast<size_t>(Primitive::stop_gradient)] =
      PrimitiveInfo{.shape_rule = checkpoint_name_rule, .cost_rule = free_cost};  // an identity
  t[static_cast<size_t>(Primitive::scan)] =
      PrimitiveInfo{.body_shape_rule = scan_rule, .body_cost_rule = scan_cost};
  t[static_cast<size_t>(Primitive::checkpoint)] =
      PrimitiveInfo{.body_shape_rule = checkpoint_rule,
                    .body_cost_rule = checkpoint_cost};
  t[static_cast<size_t>(Primitive::custom_vjp)] =
      PrimitiveInfo{.body_shape_rule = custom_vjp_rule, .body_cost_rule = custom_vjp_cost};
  t[static_cast<size_t>(Primitive::cond)] =
      PrimitiveInfo{.body_shape_rule = cond_rule, .body_cost_rule = cond_cost};
  t[static_cast<size_t>(Primitive::while_loop)] =
      PrimitiveInfo{.body_shape_rule = while_rule, .body_cost_rule = while_cost};
  t[static_cast<size_t>(Primitive::checkpoint_name)] =
      PrimitiveInfo{.shape_rule = checkpoint_name_rule, .cost_rule = free_cost};  // an identity
}

}  // namespace ferry::prims
