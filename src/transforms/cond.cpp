// cond and while_loop front ends, and cond's forward/backward pair.
//
// cond(index, operands...) has one body per branch, each taking the operands (then every value any
// branch captured). Its VJP keeps only the operands: the backward pass is another cond whose
// branches are the branches' joint programs (forward recomputed, then the VJP), so only the taken
// branch runs either way.
//
// while_loop(pred, carry..., consts...) has one body (pred, carry..., consts...) -> (pred', carry'...)
// computing the next carry and whether to go on: the predicate of the initial carry is computed
// before the loop.
#include "ferry/control_flow.h"

#include <any>

#include <fmt/format.h>

#include "ferry/error.h"
#include "trace/tracer.h"
#include "transforms/emit.h"
#include "transforms/linearize.h"

namespace ferry {
namespace {

[[noreturn]] void invalid(const std::string& msg) { throw Error(ErrorCode::invalid_argument, msg); }

std::vector<ir::Type> output_types(const ir::Program& p) {
  std::vector<ir::Type> out;
  for (ir::ValueId v : p.outputs) out.push_back(p.type(v));
  return out;
}

}  // namespace

namespace detail {

std::vector<Tensor> cond_impl(const Tensor& index, const std::vector<BranchFn>& branches,
                              const std::vector<Tensor>& operands) {
  if (!index.defined()) invalid("cond: the predicate is an undefined Tensor");
  if (index.rank() != 0 || (index.dtype() != DType::boolean && index.dtype() != DType::i32))
    invalid(fmt::format("cond: the predicate must be a bool scalar (or an i32 index for switch), got {}",
                        index.type_string()));
  if (branches.empty()) invalid("cond: needs at least one branch");
  if (index.dtype() == DType::boolean && branches.size() != 2)
    invalid(fmt::format("cond: a bool predicate picks one of 2 branches, got {}", branches.size()));
  const std::vector<ir::Type> types = transforms::defined_types(operands, "cond", "operand");
  std::vector<transforms::ClosedProgram> closed;
  for (size_t b = 0; b < branches.size(); ++b)
    closed.push_back(transforms::trace_closed(fmt::format("cond_branch{}", b), types, [&](const std::vector<Tensor>& in) {
      std::vector<Tensor> out = branches[b](in);
      transforms::defined_types(out, "cond", fmt::format("output of branch {}", b));
      return out;
    }));
  for (size_t b = 1; b < closed.size(); ++b)
    if (output_types(*closed[b].program) != output_types(*closed[0].program))
      invalid(fmt::format("cond: the branches return different types ({} outputs and {} outputs, or other shapes)",
                          closed[0].program->outputs.size(), closed[b].program->outputs.size()));
  // Every branch takes the operands and every branch's captures.
  std::vector<Tensor> all = operands;
  std::vector<size_t> at;
  for (const auto& c : closed) {
    at.push_back(all.size());
    all.insert(all.end(), c.captures.begin(), c.captures.end());
  }
  const std::vector<ir::Type> all_types = transforms::defined_types(all, "cond", "operand");
  std::vector<std::shared_ptr<const ir::Program>> bodies;
  for (size_t b = 0; b < closed.size(); ++b) {
    auto wrapped = transforms::trace_closed(fmt::format("cond_branch{}", b), all_types, [&](const std::vector<Tensor>& in) {
      std::vector<Tensor> args(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(operands.size()));
      for (size_t i = 0; i < closed[b].captures.size(); ++i) args.push_back(in[at[b] + i]);
      return transforms::emit(*closed[b].program, args);
    });
    bodies.push_back(wrapped.program);
  }
  std::vector<Tensor> inputs{index};
  inputs.insert(inputs.end(), all.begin(), all.end());
  return current_tracer("cond").bind(Primitive::cond, ir::NoParams{}, inputs, {}, bodies);
}

std::vector<Tensor> while_impl(const WhileCondFn& cond, const WhileBodyFn& body, const std::vector<Tensor>& init) {
  const std::vector<ir::Type> types = transforms::defined_types(init, "while_loop", "carry");
  auto check_pred = [](const Tensor& p) {
    if (!p.defined() || p.dtype() != DType::boolean || p.rank() != 0)
      invalid(fmt::format("while_loop: cond_fun must return a bool scalar, got {}",
                          p.defined() ? p.type_string() : "an undefined Tensor"));
  };
  Tensor pred = cond(init);
  check_pred(pred);
  // One step: the next carry, and whether the loop goes on from it.
  auto step = transforms::trace_closed("while_body", types, [&](const std::vector<Tensor>& carry) {
    std::vector<Tensor> next = body(carry);
    if (transforms::defined_types(next, "while_loop", "carry returned by body_fun") != types)
      invalid("while_loop: body_fun must return a carry of init's structure and types");
    Tensor p = cond(next);
    check_pred(p);
    std::vector<Tensor> out{p};
    out.insert(out.end(), next.begin(), next.end());
    return out;
  });
  std::vector<ir::Type> in_types{transforms::type_of(pred)};
  in_types.insert(in_types.end(), types.begin(), types.end());
  for (const Tensor& c : step.captures) in_types.push_back(transforms::type_of(c));
  auto wrapped = transforms::trace_closed("while_body", in_types, [&](const std::vector<Tensor>& in) {
    return transforms::emit(*step.program, std::vector<Tensor>(in.begin() + 1, in.end()));
  });
  std::vector<Tensor> inputs{pred};
  inputs.insert(inputs.end(), init.begin(), init.end());
  inputs.insert(inputs.end(), step.captures.begin(), step.captures.end());
  std::vector<Tensor> out =
      current_tracer("while_loop").bind(Primitive::while_loop, ir::NoParams{}, inputs, {}, {wrapped.program});
  return std::vector<Tensor>(out.begin() + 1, out.end());
}

}  // namespace detail

namespace transforms {
namespace {

struct CondResiduals {
  std::vector<Tensor> inputs, outputs;
};

std::vector<Tensor> cond_forward(const ir::Equation& eq, const std::vector<Tensor>& in, std::any& residuals) {
  std::vector<Tensor> out = replay(eq, in);
  residuals = std::make_shared<const CondResiduals>(CondResiduals{in, out});
  return out;
}

// Each branch's joint program reduced to the operands' cotangents: (operands..., output cts...) ->
// operand cts.
std::shared_ptr<const ir::Program> backward_branch(const std::shared_ptr<const ir::Program>& branch) {
  ClosedProgram joint = trace_joint(branch, "cond_branch_joint");
  const size_t no = branch->outputs.size();
  std::vector<ir::Type> types;
  for (ir::ValueId v : joint.program->inputs) types.push_back(joint.program->type(v));
  return trace_closed("cond_branch_vjp", types, [&](const std::vector<Tensor>& in) {
           std::vector<Tensor> out = emit(*joint.program, in);
           return std::vector<Tensor>(out.begin() + static_cast<std::ptrdiff_t>(no), out.end());
         }).program;
}

std::vector<Tensor> cond_backward(const ir::Equation& eq, const std::any& residuals, const std::vector<Tensor>& cts) {
  const auto& r = *std::any_cast<std::shared_ptr<const CondResiduals>>(residuals);
  std::vector<Tensor> in = r.inputs;  // index, operands
  for (size_t i = 0; i < cts.size(); ++i) in.push_back(cts[i].defined() ? cts[i] : zeros_like(r.outputs[i]));
  std::vector<std::shared_ptr<const ir::Program>> bodies;
  for (const auto& b : eq.subprograms) bodies.push_back(backward_branch(b));
  std::vector<Tensor> operand_cts =
      detail::current_tracer("cond").bind(Primitive::cond, ir::NoParams{}, in, eq.name, bodies);
  std::vector<Tensor> out{Tensor()};  // the index has no cotangent
  out.insert(out.end(), operand_cts.begin(), operand_cts.end());
  return out;
}

}  // namespace

const ControlFlowVjp kCondVjp{cond_forward, cond_backward};

}  // namespace transforms
}  // namespace ferry
