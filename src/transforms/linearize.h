// Reverse-mode differentiation of a program, emitted into the current trace.
//
// Linearization emits the program's primal computation (its "forward"), keeping the tensor of every
// value; backward() then emits the cotangent computation, walking the equations in reverse and
// applying each primitive's VJP rule (src/prims) to those tensors. Control-flow primitives (scan)
// have their own forward/backward pair, because their forward must also produce the residuals
// their backward consumes.
#pragma once

#include <any>
#include <memory>
#include <vector>

#include "ferry/tensor.h"
#include "ir/program.h"
#include "transforms/emit.h"

namespace ferry::transforms {

class Linearization {
 public:
  // Emits program(inputs) into the innermost active trace.
  Linearization(std::shared_ptr<const ir::Program> program, std::vector<Tensor> inputs);

  const std::vector<Tensor>& outputs() const { return outputs_; }
  const std::vector<Tensor>& inputs() const { return inputs_; }

  // Cotangents of the outputs (undefined = zero) to cotangents of the inputs (undefined = zero, and
  // always undefined for integer and bool inputs). May be called more than once.
  std::vector<Tensor> backward(const std::vector<Tensor>& output_cotangents) const;

 private:
  std::shared_ptr<const ir::Program> program_;
  std::vector<Tensor> inputs_, outputs_;
  std::vector<Tensor> env_;         // primal tensor of each value
  std::vector<std::any> residuals_;  // per equation, for control-flow rules
  // Per value: it depends on a floating input (stop_gradient cuts the dependence). An equation none
  // of whose inputs is active needs no VJP: nothing its cotangents reach is differentiated (a
  // while_loop on stop_gradient values, say, has none).
  std::vector<char> active_;
};

// Forward/backward pair of a primitive whose VJP needs residuals computed in its forward.
struct ControlFlowVjp {
  // Emits the forward of `eq` on `inputs`; returns its outputs and stores what backward needs.
  std::vector<Tensor> (*forward)(const ir::Equation& eq, const std::vector<Tensor>& inputs, std::any& residuals);
  // Cotangents of eq's inputs from those of its outputs (undefined = zero).
  std::vector<Tensor> (*backward)(const ir::Equation& eq, const std::any& residuals,
                                  const std::vector<Tensor>& output_cotangents);
};

// nullptr for primitives that use their registry VJP rule.
const ControlFlowVjp* control_flow_vjp(Primitive p);
extern const ControlFlowVjp kScanVjp;        // scan_vjp.cpp
extern const ControlFlowVjp kCheckpointVjp;  // checkpoint_vjp.cpp
extern const ControlFlowVjp kCustomVjpVjp;   // custom_vjp.cpp
extern const ControlFlowVjp kCondVjp;        // cond.cpp

// The joint program of `body`: J(inputs..., cotangents of outputs...) = (outputs..., cotangents of
// inputs...), traced as a child of the current trace by linearizing body (zeros where no cotangent
// flows). Checkpoint decisions on body equations carry over to the equations that replay them and
// to those their VJP rules emit.
ClosedProgram trace_joint(const std::shared_ptr<const ir::Program>& body, const std::string& name);

// a + b where either may be undefined (zero).
Tensor add_cotangents(const Tensor& a, const Tensor& b);

}  // namespace ferry::transforms
