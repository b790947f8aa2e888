// Tracer: records the equations of one function being traced into a Program. Tensors point at their
// tracer; operations on them call bind(), which runs the primitive's shape rule and appends one
// equation. The innermost active tracer (a thread-local stack) receives values with no inputs.
//
// A tracer started while another is active is its child (a function traced inside a traced function:
// a scan body, a function being differentiated). A Tensor of an active ancestor used in the child is
// captured: it becomes an extra input of the child's program (after the explicit ones), and
// captures() tells the transformation which outer Tensor feeds it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ferry/tensor.h"
#include "ir/program.h"
#include "trace/named_decision.h"

namespace ferry::detail {

class Tracer : public std::enable_shared_from_this<Tracer> {
 public:
  // A child tracer (`child`) belongs to the innermost active one and may capture its tensors.
  explicit Tracer(std::string name, bool child = false);

  Tensor add_input(const ir::Type& type);
  // Appends `prim(inputs)` and returns its outputs. Throws INVALID_ARGUMENT for a shape error, an
  // undefined input, or an input from another (or a finished) trace.
  std::vector<Tensor> bind(Primitive prim, ir::Params params, const std::vector<Tensor>& inputs,
                           std::string name = {}, std::vector<std::shared_ptr<const ir::Program>> bodies = {});
  Tensor bind1(Primitive prim, ir::Params params, const std::vector<Tensor>& inputs, std::string name = {});

  // Ends the trace; the tracer accepts no more equations.
  std::shared_ptr<ir::Program> finish(const std::vector<Tensor>& outputs);

  // Outer tensors captured so far, in the order of the program inputs they became.
  const std::vector<Tensor>& captures() const { return captures_; }

  const ir::Type& type(ir::ValueId id) const { return program_->type(id); }
  // Equations recorded so far, for transformations that annotate what they emitted.
  size_t num_equations() const { return program_->equations.size(); }
  ir::Equation& equation(size_t i) { return program_->equations.at(i); }
  const ir::Program& program() const { return *program_; }
  bool finished() const { return finished_; }

  // What differentiation learns about the policies' named decisions, kept on the root trace (the
  // one lowering finishes) whichever nested trace records it.
  void record_named_decision(NamedDecision d);
  const std::vector<NamedDecision>& named_decisions() const { return named_decisions_; }

 private:
  ir::ValueId check_input(const Tensor& t, std::string_view what);
  // This tracer's value standing for `t`, a tensor of an active ancestor.
  ir::ValueId capture(const Tensor& t);
  bool is_ancestor(const Tracer* t) const;

  std::shared_ptr<ir::Program> program_;
  std::shared_ptr<Tracer> parent_;
  std::vector<Tensor> captures_;
  std::vector<std::pair<const Tracer*, ir::ValueId>> capture_keys_;  // parallel to captures_
  bool finished_ = false;
  std::vector<NamedDecision> named_decisions_;  // root trace only
};

// The innermost active tracer; throws INVALID_ARGUMENT naming `op` when there is none.
Tracer& current_tracer(std::string_view op);
void push_tracer(std::shared_ptr<Tracer> t);
void pop_tracer();

}  // namespace ferry::detail
