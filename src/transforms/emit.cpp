#include "transforms/emit.h"

#include <fmt/format.h>

#include "ferry/error.h"
#include "trace/tracer.h"

namespace ferry::transforms {

ir::Type type_of(const Tensor& t) { return t.tracer()->type(t.id()); }

std::vector<ir::Type> defined_types(const std::vector<Tensor>& ts, std::string_view op, std::string_view what) {
  std::vector<ir::Type> out;
  for (size_t i = 0; i < ts.size(); ++i) {
    if (!ts[i].defined())
      throw Error(ErrorCode::invalid_argument, fmt::format("{}: {} {} is an undefined Tensor", op, what, i));
    out.push_back(type_of(ts[i]));
  }
  return out;
}

ClosedProgram trace_closed(const std::string& name, const std::vector<ir::Type>& input_types, const TracedFn& fn) {
  detail::current_tracer(name);  // a child needs a parent
  auto tracer = std::make_shared<detail::Tracer>(name, /*child=*/true);
  std::vector<Tensor> inputs;
  for (const ir::Type& t : input_types) inputs.push_back(tracer->add_input(t));
  detail::push_tracer(tracer);
  std::vector<Tensor> outputs;
  try {
    outputs = fn(inputs);
  } catch (...) {
    detail::pop_tracer();
    throw;
  }
  detail::pop_tracer();
  ClosedProgram closed;
  closed.program = tracer->finish(outputs);
  closed.captures = tracer->captures();
  return closed;
}

std::vector<Tensor> replay(const ir::Equation& eq, const std::vector<Tensor>& inputs) {
  return replay(eq, inputs, eq.subprograms);
}

std::vector<Tensor> replay(const ir::Equation& eq, const std::vector<Tensor>& inputs,
                           std::vector<std::shared_ptr<const ir::Program>> bodies) {
  detail::Tracer& tracer = detail::current_tracer(primitive_name(eq.prim));
  std::vector<Tensor> out = tracer.bind(eq.prim, eq.params, inputs, eq.name, std::move(bodies));
  ir::Equation& made = tracer.equation(tracer.num_equations() - 1);
  made.decision = eq.decision;
  made.rematerialized = eq.rematerialized;
  made.automatic = eq.automatic;
  return out;
}

std::vector<Tensor> emit(const ir::Program& program, const std::vector<Tensor>& inputs) {
  if (inputs.size() != program.inputs.size())
    throw Error(ErrorCode::internal, fmt::format("emit: program {} takes {} inputs, got {}", program.name,
                                                 program.inputs.size(), inputs.size()));
  std::vector<Tensor> env(program.values.size());
  for (size_t i = 0; i < inputs.size(); ++i) env[static_cast<size_t>(program.inputs[i])] = inputs[i];
  for (const ir::Equation& eq : program.equations) {
    std::vector<Tensor> in;
    for (ir::ValueId v : eq.inputs) in.push_back(env[static_cast<size_t>(v)]);
    std::vector<Tensor> out = replay(eq, in);
    for (size_t i = 0; i < out.size(); ++i) env[static_cast<size_t>(eq.outputs[i])] = out[i];
  }
  std::vector<Tensor> outs;
  for (ir::ValueId v : program.outputs) outs.push_back(env[static_cast<size_t>(v)]);
  return outs;
}

}  // namespace ferry::transforms
