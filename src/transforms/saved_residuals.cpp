// saved_residuals: what the backward pass of a function keeps, found the way differentiation finds
// it (the joint program, partitioned with everything the backward part reads saved), and described
// by where each value came from; then the names a checkpoint policy saves or offloads that no
// backward pass reads (recorded while differentiating, unused_names.h), as "unused".
#include <fmt/format.h>

#include "ferry/checkpoint.h"
#include "ferry/error.h"
#include "transforms/emit.h"
#include "transforms/linearize.h"
#include "trace/tracer.h"
#include "transforms/partition.h"
#include "transforms/unused_names.h"

namespace ferry {
namespace {

// Index of the equation defining each value (-1 for program inputs).
std::vector<int> producers(const ir::Program& p) {
  std::vector<int> out(p.values.size(), -1);
  for (size_t e = 0; e < p.equations.size(); ++e)
    for (ir::ValueId v : p.equations[e].outputs) out[static_cast<size_t>(v)] = static_cast<int>(e);
  return out;
}

// An input of the top-level program (scan == nullptr) or of a scan body.
std::string input_description(const ir::Program& p, ir::ValueId v, const ir::ScanParams* scan) {
  size_t i = 0;
  while (i < p.inputs.size() && p.inputs[i] != v) ++i;
  if (scan == nullptr) return fmt::format("argument {}", i);
  auto nc = static_cast<size_t>(scan->num_carry), nx = static_cast<size_t>(scan->num_xs);
  if (i < nc) return fmt::format("scan carry {}", i);
  if (i < nc + nx) return fmt::format("scan xs {}", i - nc);
  return fmt::format("scan constant {}", i - nc - nx);
}

// Where `v` of program `p` came from, and whether it was offloaded on the way.
std::string describe(const ir::Program& p, ir::ValueId v, const ir::ScanParams* scan, bool& offloaded) {
  std::vector<int> prod = producers(p);
  for (int depth = 0; depth < 64; ++depth) {
    int e = prod[static_cast<size_t>(v)];
    if (e < 0) return input_description(p, v, scan);
    const ir::Equation& eq = p.equations[static_cast<size_t>(e)];
    if (eq.prim == Primitive::device_put && p.type(eq.inputs[0]).kind != p.type(v).kind) {
      offloaded = offloaded || p.type(v).kind != MemoryKind::device;
      v = eq.inputs[0];
      continue;
    }
    if (eq.prim == Primitive::checkpoint_name) return fmt::format("named '{}'", eq.name);
    if (eq.prim == Primitive::scan) {
      // A stacked residual: describe what the forward body stacks.
      size_t k = 0;
      while (eq.outputs[k] != v) ++k;
      const ir::Program& body = *eq.subprograms.at(0);
      const auto& params = std::get<ir::ScanParams>(eq.params);
      std::string inner = describe(body, body.outputs.at(k), &params, offloaded);
      return fmt::format("{}, stacked over {} steps", inner, params.length);
    }
    return fmt::format("output of {}", primitive_name(eq.prim));
  }
  return "a long chain of copies";
}

}  // namespace

std::string format_residuals(const std::vector<Residual>& residuals) {
  std::string out;
  for (const Residual& r : residuals) {
    std::string type = type_string(r.type.dtype, r.type.shape);
    if (r.type.kind != MemoryKind::device) type += fmt::format("{{{}}}", memory_kind_name(r.type.kind));
    out += fmt::format("{:<28} {:<10} {}\n", type, r.decision, r.source);
  }
  return out;
}

namespace detail {

std::vector<Residual> residuals_impl(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                                     const std::vector<Tensor>& args) {
  detail::Tracer& session = current_tracer("saved_residuals");
  const size_t first_record = session.named_decisions().size();
  std::vector<ir::Type> types;
  for (const Tensor& a : args) types.push_back(transforms::type_of(a));
  transforms::ClosedProgram closed = transforms::trace_closed("f", types, fn);
  transforms::ClosedProgram joint = transforms::trace_joint(closed.program, "joint");
  const ir::Program& J = *joint.program;
  transforms::PartitionSpec spec;
  spec.joint = &J;
  spec.num_primal_inputs = closed.program->inputs.size();
  spec.num_primal_outputs = closed.program->outputs.size();
  spec.defer_default_saves = true;  // as the compiled program computes that work: in the backward pass
  transforms::Partition part = transforms::partition(spec);
  std::vector<Residual> out;
  for (const transforms::PartitionResidual& r : part.residuals) {
    const ir::Type& t = J.type(r.value);
    Residual res;
    res.type = {t.shape, t.dtype, t.kind};
    if (r.input_index >= 0) {
      res.decision = "argument";
      res.source = fmt::format("argument {}", r.input_index);
    } else {
      bool offloaded = false;
      res.source = describe(J, r.value, nullptr, offloaded);
      res.decision = offloaded ? "offloaded" : "saved";
    }
    out.push_back(std::move(res));
  }
  const auto& records = session.named_decisions();
  std::vector<transforms::NamedDecision> mine(records.begin() + static_cast<std::ptrdiff_t>(first_record), records.end());
  for (const transforms::NamedDecision& d : transforms::unneeded_names(mine)) {
    Residual res;
    res.type = {d.type.shape, d.type.dtype, d.type.kind};
    res.decision = "unused";
    res.source = transforms::unneeded_description(d);
    out.push_back(std::move(res));
  }
  return out;
}

}  // namespace detail
}  // namespace ferry
