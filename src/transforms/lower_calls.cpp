#include "transforms/lower_calls.h"

#include "ferry/error.h"
#include "trace/tracer.h"
#include "transforms/emit.h"

namespace ferry::transforms {
namespace {

bool has_calls(const ir::Program& p) {
  for (const ir::Equation& eq : p.equations) {
    if (eq.prim == Primitive::custom_vjp || eq.prim == Primitive::cond) return true;
    for (const auto& b : eq.subprograms)
      if (has_calls(*b)) return true;
  }
  return false;
}

std::shared_ptr<const ir::Program> lower(const std::shared_ptr<const ir::Program>& program);

// program's equations replayed into the current trace, custom_vjp and cond lowered.
std::vector<Tensor> replay(const ir::Program& program, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> env(program.values.size());
  for (size_t i = 0; i < inputs.size(); ++i) env[static_cast<size_t>(program.inputs[i])] = inputs[i];
  detail::Tracer& tracer = detail::current_tracer(program.name);
  for (const ir::Equation& eq : program.equations) {
    std::vector<Tensor> in;
    for (ir::ValueId v : eq.inputs) in.push_back(env[static_cast<size_t>(v)]);
    std::vector<Tensor> out;
    if (eq.prim == Primitive::custom_vjp) {
      out = replay(*eq.subprograms.at(0), in);
    } else if (eq.prim == Primitive::cond) {
      std::vector<Tensor> operands(in.begin() + 1, in.end());
      std::vector<std::vector<Tensor>> branch_outs;
      for (const auto& b : eq.subprograms) branch_outs.push_back(replay(*b, operands));
      for (size_t k = 0; k < branch_outs[0].size(); ++k) {
        std::vector<Tensor> cases;
        for (const auto& bo : branch_outs) cases.push_back(bo[k]);
        out.push_back(select_n(in[0], cases));
      }
    } else {
      std::vector<std::shared_ptr<const ir::Program>> bodies;
      for (const auto& b : eq.subprograms) bodies.push_back(lower(b));
      const size_t at = tracer.num_equations();
      out = tracer.bind(eq.prim, eq.params, in, eq.name, bodies);
      tracer.equation(at).rematerialized = eq.rematerialized;
      tracer.equation(at).decision = eq.decision;
    }
    for (size_t i = 0; i < out.size(); ++i) env[static_cast<size_t>(eq.outputs[i])] = out[i];
  }
  std::vector<Tensor> outs;
  for (ir::ValueId v : program.outputs) outs.push_back(env[static_cast<size_t>(v)]);
  return outs;
}

std::shared_ptr<const ir::Program> lower(const std::shared_ptr<const ir::Program>& program) {
  if (!has_calls(*program)) return program;
  auto tracer = std::make_shared<detail::Tracer>(program->name);
  std::vector<Tensor> inputs;
  for (ir::ValueId v : program->inputs) inputs.push_back(tracer->add_input(program->type(v)));
  detail::push_tracer(tracer);
  std::vector<Tensor> outs;
  try {
    outs = replay(*program, inputs);
  } catch (...) {
    detail::pop_tracer();
    throw;
  }
  detail::pop_tracer();
  return tracer->finish(outs);
}

}  // namespace

std::shared_ptr<const ir::Program> lower_calls(const std::shared_ptr<const ir::Program>& program) {
  return lower(program);
}

}  // namespace ferry::transforms
