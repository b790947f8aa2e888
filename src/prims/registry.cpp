#include "prims/registry.h"

#include <fmt/format.h>

#include "ferry/error.h"
#include "ir/echo.h"
#include "ir/ops.h"
#include "prims/families.h"

namespace ferry::prims {
namespace {

Table build_table() {
  Table t{};
  register_elementwise(t);
  register_shape_ops(t);
  register_reductions(t);
  register_dot(t);
  register_indexing(t);
  register_gather_scatter(t);
  register_random(t);
  register_memory(t);
  register_control_flow(t);
  register_copies(t);
  register_fused(t);
  register_collectives(t);
  for (int i = 0; i < ir::kNumOps; ++i) {
    // Name, operands, parameters and in-place inputs: the op table's.
    const ir::OpInfo& op = ir::op_info(static_cast<Primitive>(i));
    t[i].prim = op.prim;
    t[i].name = op.name;
    t[i].num_inputs = op.num_inputs;
    t[i].params = op.params;
    t[i].in_place = op.in_place;
    if ((t[i].shape_rule == nullptr) == (t[i].body_shape_rule == nullptr) ||
        (t[i].cost_rule == nullptr) == (t[i].body_cost_rule == nullptr) ||
        (t[i].body_shape_rule != nullptr) != ir::has(op.prim, ir::kBodies))
      throw Error(ErrorCode::internal, fmt::format("primitive {} has no complete registry entry", op.name));
  }
  return t;
}

const Table& table() {
  static const Table t = build_table();
  return t;
}

// Bounded (ir/echo.h): an equation may have any number of operands.
std::string operand_list(std::span<const ir::Type> inputs) {
  return ir::echo_list(inputs.size(), [&](size_t i) { return ir::to_string(inputs[i]); });
}

}  // namespace

const PrimitiveInfo& info(Primitive p) { return table().at(static_cast<size_t>(p)); }

const PrimitiveInfo* find(std::string_view name) {
  const ir::OpInfo* op = ir::find_op(name);
  return op ? &info(op->prim) : nullptr;
}

std::vector<ir::Type> infer_types(Primitive p, const ir::Params& params, std::span<const ir::Type> inputs,
                                  std::span<const std::shared_ptr<const ir::Program>> bodies) {
  const PrimitiveInfo& e = info(p);
  auto fail = [&](const std::string& what) {
    throw Error(ErrorCode::invalid_argument, fmt::format("{}: {} (operands: {})", e.name, what, operand_list(inputs)));
  };
  if (e.num_inputs >= 0 && static_cast<int>(inputs.size()) != e.num_inputs)
    fail(fmt::format("takes {} operand(s), got {}", e.num_inputs, inputs.size()));
  // A fused group may compute everything it returns from its own iotas and constants (a mask).
  if (e.num_inputs < 0 && inputs.empty() && p != ir::op::fused) fail("takes at least one operand, got none");
  if (params.index() != e.params.index()) fail("parameters of the wrong kind for this primitive");
  for (const ir::Type& t : inputs)
    for (int64_t d : t.shape)
      if (d < 0) fail("negative dimension size");
  if (e.body_shape_rule == nullptr && !bodies.empty()) fail("takes no sub-programs");
  try {
    if (e.body_shape_rule != nullptr) return e.body_shape_rule(inputs, params, bodies);
    return e.shape_rule(inputs, params);
  } catch (const Error& err) {
    if (err.code() != ErrorCode::invalid_argument) throw;
    fail(err.message());
  }
  return {};
}

Cost cost(const ir::Equation& eq, const ir::Program& program) {
  if (info(eq.prim).body_cost_rule != nullptr) return info(eq.prim).body_cost_rule(eq);
  std::vector<ir::Type> in, out;
  for (auto v : eq.inputs) in.push_back(program.type(v));
  for (auto v : eq.outputs) out.push_back(program.type(v));
  return info(eq.prim).cost_rule(in, out, eq.params);
}

Cost& Cost::operator+=(const Cost& o) {
  flops += o.flops;
  bytes_read += o.bytes_read;
  bytes_written += o.bytes_written;
  transcendentals += o.transcendentals;
  dot_flops += o.dot_flops;
  dot_products += o.dot_products;
  return *this;
}

Cost Cost::scaled(double times) const {
  auto bytes = [times](int64_t b) { return static_cast<int64_t>(static_cast<double>(b) * times); };
  return Cost{.flops = flops * times, .bytes_read = bytes(bytes_read), .bytes_written = bytes(bytes_written),
              .transcendentals = transcendentals * times, .dot_flops = dot_flops * times,
              .dot_products = dot_products * times};
}

Cost program_cost(const ir::Program& program) {
  Cost total;
  for (const ir::Equation& eq : program.equations) total += cost(eq, program);
  return total;
}

std::string_view name_of(Primitive p) { return ir::name_of(p); }

}  // namespace ferry::prims
