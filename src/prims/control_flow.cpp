// Control flow and checkpointing: scan (a loop) and checkpoint (a function whose backward pass
// follows a policy), whose bodies decide their output types, and checkpoint_name (an identity).
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
      detail::checked_elements(t.shape, "stacked ys", dtype_size(t.dtype));
    }
    out.push_back(t);
  }
  return out;
}

Cost scan_cost(const ir::Equation& eq) {
  const auto& p = detail::params_as<ir::ScanParams>(eq.params);
  Cost body = program_cost(*eq.subprograms.at(0));
  double n = static_cast<double>(p.length);
  return Cost{body.flops * n, static_cast<int64_t>(static_cast<double>(body.bytes_read) * n),
              static_cast<int64_t>(static_cast<double>(body.bytes_written) * n)};
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

std::vector<Tensor> checkpoint_name_vjp(const ir::Equation&, std::span<const Tensor>, std::span<const Tensor>,
                                        std::span<const Tensor> g) {
  return {g[0]};
}

}  // namespace

void register_control_flow(Table& t) {
  t[static_cast<size_t>(Primitive::scan)] =
      PrimitiveInfo{.prim = Primitive::scan, .name = "scan", .num_inputs = -1, .params = ir::ScanParams{},
                    .body_shape_rule = scan_rule, .body_cost_rule = scan_cost, .in_place = kNoInPlace};
  t[static_cast<size_t>(Primitive::checkpoint)] =
      PrimitiveInfo{.prim = Primitive::checkpoint, .name = "checkpoint", .num_inputs = -1,
                    .params = ir::CheckpointParams{}, .body_shape_rule = checkpoint_rule,
                    .body_cost_rule = checkpoint_cost, .in_place = kNoInPlace};
  t[static_cast<size_t>(Primitive::checkpoint_name)] =
      PrimitiveInfo{.prim = Primitive::checkpoint_name, .name = "checkpoint_name", .num_inputs = 1,
                    .params = ir::NoParams{}, .shape_rule = checkpoint_name_rule, .cost_rule = free_cost,
                    .vjp_rule = checkpoint_name_vjp, .in_place = in_place_over({0})};  // an identity
}

}  // namespace ferry::prims
