// Tracing helpers shared by the transformations: trace a C++ function into a closed sub-program of
// the current trace, and replay a program's equations into the current trace.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/tensor.h"
#include "ir/program.h"

namespace ferry::transforms {

// A program plus the outer tensors it captured; the program's inputs are the explicit ones followed
// by one per capture.
struct ClosedProgram {
  std::shared_ptr<const ir::Program> program;
  std::vector<Tensor> captures;
  size_t num_explicit_inputs() const { return program->inputs.size() - captures.size(); }
};

using TracedFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// Traces fn on fresh inputs of these types, as a child of the innermost active trace (so it may use
// that trace's tensors: they become captures). Throws INVALID_ARGUMENT when no trace is active.
ClosedProgram trace_closed(const std::string& name, const std::vector<ir::Type>& input_types, const TracedFn& fn);

// The one way to rebind an equation into the innermost active trace: eq on `inputs` (with eq's
// bodies, or `bodies` where given), carrying every annotation it has (name, checkpoint decision,
// rematerialized, automatic). A caller that means to drop one clears it on the result. Returns its
// outputs.
std::vector<Tensor> replay(const ir::Equation& eq, const std::vector<Tensor>& inputs);
std::vector<Tensor> replay(const ir::Equation& eq, const std::vector<Tensor>& inputs,
                           std::vector<std::shared_ptr<const ir::Program>> bodies);

// Appends program's equations to the innermost active trace (each by replay) and returns the
// tensors of its outputs. inputs must match the program's inputs (tensors of enclosing traces are
// captured as usual).
std::vector<Tensor> emit(const ir::Program& program, const std::vector<Tensor>& inputs);

// The tensor type of t.
ir::Type type_of(const Tensor& t);
// The types of ts; INVALID_ARGUMENT "<op>: <what> <i> is an undefined Tensor" for an undefined one.
std::vector<ir::Type> defined_types(const std::vector<Tensor>& ts, std::string_view op, std::string_view what);

}  // namespace ferry::transforms
