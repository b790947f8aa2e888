// The VJP of checkpoint: the body's joint program is partitioned by the decisions its policy
// recorded (equations without one are recomputed), then the forward part is emitted in place of the
// checkpoint and the backward part when the cotangents arrive. Recomputed equations in the backward
// part are marked rematerialized (unless prevent_cse is off), offloaded residuals travel as
// device_put copies in their destination kind and are fetched back at the start of the backward part.
// Which named values the policy saved or offloaded, and whether the backward part needed them, is
// recorded on the trace (unused_names.h) so that lowering can warn about names with no effect.
#include <any>
#include <memory>
#include <vector>

#include "ir/params.h"
#include "trace/tracer.h"
#include "transforms/emit.h"
#include "transforms/linearize.h"
#include "transforms/partition.h"
#include "transforms/unused_names.h"

namespace ferry::transforms {
namespace {

struct CheckpointResiduals {
  std::shared_ptr<const ir::Program> backward;
  std::vector<Tensor> residuals;  // in the backward program's input order
  std::vector<Tensor> outputs;
};

std::vector<Tensor> checkpoint_forward(const ir::Equation& eq, const std::vector<Tensor>& in, std::any& residuals) {
  const auto& body = eq.subprograms.at(0);
  ClosedProgram joint = trace_joint(body, "checkpoint_joint");
  PartitionSpec spec;
  spec.joint = joint.program.get();
  spec.num_primal_inputs = body->inputs.size();
  spec.num_primal_outputs = body->outputs.size();
  spec.default_kind = ir::RematDecision::Kind::recompute;
  spec.prevent_cse = std::get<ir::CheckpointParams>(eq.params).prevent_cse;
  Partition part = partition(spec);
  detail::Tracer& tracer = detail::current_tracer("checkpoint");
  for (NamedDecision& d : named_decisions(*joint.program, part, eq.name)) tracer.record_named_decision(std::move(d));

  std::vector<Tensor> fwd = emit(*part.forward, in);
  auto res = std::make_shared<CheckpointResiduals>();
  res->backward = part.backward;
  res->outputs.assign(fwd.begin(), fwd.begin() + static_cast<std::ptrdiff_t>(body->outputs.size()));
  size_t next = body->outputs.size();
  for (const PartitionResidual& r : part.residuals)
    res->residuals.push_back(r.input_index >= 0 ? in[static_cast<size_t>(r.input_index)] : fwd[next++]);
  residuals = std::shared_ptr<const CheckpointResiduals>(res);
  return res->outputs;
}

std::vector<Tensor> checkpoint_backward(const ir::Equation&, const std::any& residuals, const std::vector<Tensor>& cts) {
  const auto& r = *std::any_cast<std::shared_ptr<const CheckpointResiduals>>(residuals);
  std::vector<Tensor> in = r.residuals;
  for (size_t i = 0; i < cts.size(); ++i) in.push_back(cts[i].defined() ? cts[i] : zeros_like(r.outputs[i]));
  return emit(*r.backward, in);
}

}  // namespace

const ControlFlowVjp kCheckpointVjp{checkpoint_forward, checkpoint_backward};

}  // namespace ferry::transforms
