// The VJP of scan.
//
// The body's joint program J(c, x, k, ct_c', ct_y) = (c', y, ct_c, ct_x, ct_k) is traced once by
// linearizing the body, then partitioned (partition.h) with loop constants k as invariant inputs:
// - residuals computed in the body are stacked along a new leading axis by the forward scan, each
//   in its own memory kind (an offloaded one is written straight into host memory, one slice per
//   step); a carry input needed by the backward pass is stacked too (the carry before the step);
// - x slices are read again from xs, loop constants are passed to the backward scan as constants,
//   and loop-invariant values are recomputed there instead of being stacked.
// The backward scan runs the other way, carrying ct_c and the accumulated ct_k, and stacks ct_x.
#include <any>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "ferry/error.h"
#include "ir/echo.h"
#include "ir/params.h"
#include "ir/type.h"
#include "trace/tracer.h"
#include "transforms/emit.h"
#include "transforms/linearize.h"
#include "transforms/partition.h"

namespace ferry::transforms {
namespace {

using ir::ValueId;

struct ScanResiduals {
  ir::ScanParams params;
  std::shared_ptr<const ir::Program> backward_body;
  std::vector<Tensor> stacked;       // stacked by the forward scan, in the backward body's order
  std::vector<Tensor> xs_used;       // xs the backward body reads again
  std::vector<Tensor> consts_used;   // loop constants the backward body reads
  std::vector<size_t> float_consts;  // indices (into k) whose cotangents are accumulated
  std::vector<Tensor> inputs;        // the scan's inputs
  std::vector<Tensor> outputs;       // the scan's outputs
};

// Where a residual of a scan body comes from, for messages: followed through the inner scans that
// stacked it down to the equation (or carry) that made it, counting those scans.
struct Origin {
  std::string what;
  int scans = 0;
};

Origin origin_of(const ir::Program& body, ValueId v) {
  Origin o;
  const ir::Program* p = &body;
  while (true) {
    const ir::Equation* def = nullptr;
    size_t index = 0;
    for (const ir::Equation& e : p->equations)
      for (size_t k = 0; k < e.outputs.size(); ++k)
        if (e.outputs[k] == v) def = &e, index = k;
    if (def && def->prim == Primitive::scan &&
        index >= static_cast<size_t>(std::get<ir::ScanParams>(def->params).num_carry)) {
      ++o.scans;
      p = def->subprograms.at(0).get();
      v = p->outputs.at(index);
      continue;
    }
    const std::string type = ir::to_string(p->type(v));
    if (def == nullptr) o.what = fmt::format("a carry of a scan body ({})", type);
    else o.what = fmt::format("the {} output of {}{}", type, primitive_name(def->prim),
                              def->name.empty() ? "" : fmt::format(" named '{}'", ir::echo(def->name)));
    return o;
  }
}

// Stacking adds a dimension per scan: a residual that would outgrow the rank limit is refused here,
// while differentiating (at lower()), naming the value and the scans, rather than by the compiler.
void check_stacked_ranks(const ir::Equation& eq, const ir::Program& fwd_body, size_t n_out) {
  for (size_t k = n_out; k < fwd_body.outputs.size(); ++k) {
    const ir::Type& t = fwd_body.type(fwd_body.outputs[k]);
    if (t.rank() < ir::kMaxRank) continue;
    const Origin o = origin_of(fwd_body, fwd_body.outputs[k]);
    throw Error(ErrorCode::invalid_argument,
                fmt::format("grad of scan{}: its backward pass needs {}, which each of {} nested scan(s) stacks along "
                            "a new leading axis: {} dimensions, more than {} (ferry's limit). Nest fewer scans, or "
                            "checkpoint an inner scan's body with a policy that recomputes the value "
                            "(policies::nothing_saveable) so that it is not stacked",
                            eq.name.empty() ? "" : fmt::format(" '{}'", ir::echo(eq.name)), o.what, o.scans + 1,
                            t.rank() + 1, ir::kMaxRank));
  }
}

std::vector<Tensor> scan_forward(const ir::Equation& eq, const std::vector<Tensor>& in, std::any& residuals) {
  const auto& params = std::get<ir::ScanParams>(eq.params);
  const auto& body = eq.subprograms.at(0);
  const size_t nc = static_cast<size_t>(params.num_carry), nx = static_cast<size_t>(params.num_xs);
  const size_t n_in = body->inputs.size(), nk = n_in - nc - nx, n_out = body->outputs.size(), ny = n_out - nc;

  ClosedProgram joint = trace_joint(body, "scan_joint");
  const ir::Program& J = *joint.program;
  PartitionSpec spec;
  spec.joint = &J;
  spec.num_primal_inputs = n_in;
  spec.num_primal_outputs = n_out;
  spec.invariant_inputs.assign(n_in, 0);
  for (size_t i = nc + nx; i < n_in; ++i) spec.invariant_inputs[i] = 1;
  Partition part = partition(spec);

  // Forward body: the partition's forward program, plus the carry inputs the backward part needs
  // (stacked like any other residual). Residuals in backward-body order: stacked ones first.
  std::vector<size_t> stacked_residuals, xs_used, consts_used;  // indices into part.residuals / x / k
  for (size_t r = 0; r < part.residuals.size(); ++r) {
    int i = part.residuals[r].input_index;
    if (i < 0 || static_cast<size_t>(i) < nc) stacked_residuals.push_back(r);
    else if (static_cast<size_t>(i) < nc + nx) xs_used.push_back(static_cast<size_t>(i) - nc);
    else consts_used.push_back(static_cast<size_t>(i) - nc - nx);
  }
  auto fwd_body = std::make_shared<ir::Program>(*part.forward);
  fwd_body->name = "scan_fwd_body";
  {
    // part.forward outputs: n_out primal outputs, then the computed residuals in order.
    std::vector<ValueId> computed(fwd_body->outputs.begin() + static_cast<std::ptrdiff_t>(n_out), fwd_body->outputs.end());
    fwd_body->outputs.resize(n_out);
    size_t next = 0;
    for (size_t r : stacked_residuals) {
      int i = part.residuals[r].input_index;
      fwd_body->outputs.push_back(i >= 0 ? fwd_body->inputs[static_cast<size_t>(i)] : computed[next++]);
    }
  }

  // Backward body, inputs in scan order: carry (ct_c, accumulated ct_k), xs (stacked residual
  // slices, x slices, ct_y), consts (k read again).
  auto res = std::make_shared<ScanResiduals>();
  res->params = params;
  const ir::Program& B = *part.backward;  // (residuals..., ct_c' (nc), ct_y (ny)) -> (ct_c, ct_x, ct_k)
  const size_t nr = part.residuals.size();
  ProgramCopier bwd(B, "scan_bwd_body");
  for (size_t i = 0; i < nc; ++i) bwd.add_input(B.inputs[nr + i]);
  std::vector<ValueId> acc;
  for (size_t i = 0; i < nk; ++i) {
    const ir::Type& t = body->type(body->inputs[nc + nx + i]);
    if (!is_floating(t.dtype)) continue;
    res->float_consts.push_back(i);
    acc.push_back(bwd.add_input_of_type(t));
  }
  for (size_t r : stacked_residuals) bwd.add_input(B.inputs[r]);
  auto residual_input = [&](int input_index) {
    for (size_t r = 0; r < nr; ++r)
      if (part.residuals[r].input_index == input_index) return B.inputs[r];
    throw Error(ErrorCode::internal, "scan vjp: missing residual input");
  };
  for (size_t x : xs_used) bwd.add_input(residual_input(static_cast<int>(nc + x)));
  for (size_t i = 0; i < ny; ++i) bwd.add_input(B.inputs[nr + nc + i]);
  for (size_t k : consts_used) bwd.add_input(residual_input(static_cast<int>(nc + nx + k)));
  for (const ir::Equation& e : B.equations) bwd.copy(e);
  ir::Program& bp = bwd.program();
  for (size_t i = 0; i < nc; ++i) bp.outputs.push_back(bwd.map(B.outputs[i]));
  for (size_t j = 0; j < res->float_consts.size(); ++j) {
    ValueId ct_k = bwd.map(B.outputs[nc + nx + res->float_consts[j]]);
    bp.outputs.push_back(bwd.append(Primitive::add, ir::NoParams{}, {acc[j], ct_k}, bp.type(acc[j])));
  }
  for (size_t i = 0; i < nx; ++i) bp.outputs.push_back(bwd.map(B.outputs[nc + i]));
  res->backward_body = bwd.finish();

  // The forward scan.
  check_stacked_ranks(eq, *fwd_body, n_out);
  std::vector<Tensor> out = detail::current_tracer("scan").bind(Primitive::scan, params, in, eq.name, {fwd_body});
  res->inputs = in;
  res->outputs.assign(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n_out));
  res->stacked.assign(out.begin() + static_cast<std::ptrdiff_t>(n_out), out.end());
  for (size_t i : xs_used) res->xs_used.push_back(in[nc + i]);
  for (size_t i : consts_used) res->consts_used.push_back(in[nc + nx + i]);
  residuals = std::shared_ptr<const ScanResiduals>(res);
  return res->outputs;
}

std::vector<Tensor> scan_backward(const ir::Equation& eq, const std::any& residuals, const std::vector<Tensor>& cts) {
  const auto& r = *std::any_cast<std::shared_ptr<const ScanResiduals>>(residuals);
  const size_t nc = static_cast<size_t>(r.params.num_carry), nx = static_cast<size_t>(r.params.num_xs);
  auto or_zeros = [](const Tensor& ct, const Tensor& like) { return ct.defined() ? ct : zeros_like(like); };
  std::vector<Tensor> in;
  for (size_t i = 0; i < nc; ++i) in.push_back(or_zeros(cts[i], r.outputs[i]));
  for (size_t i : r.float_consts) in.push_back(zeros_like(r.inputs[nc + nx + i]));
  size_t num_carry = in.size();
  in.insert(in.end(), r.stacked.begin(), r.stacked.end());
  in.insert(in.end(), r.xs_used.begin(), r.xs_used.end());
  for (size_t i = nc; i < cts.size(); ++i) in.push_back(or_zeros(cts[i], r.outputs[i]));
  size_t num_xs = in.size() - num_carry;
  in.insert(in.end(), r.consts_used.begin(), r.consts_used.end());
  ir::ScanParams p{r.params.length, !r.params.reverse, static_cast<int64_t>(num_carry), static_cast<int64_t>(num_xs)};
  std::vector<Tensor> out = detail::current_tracer("scan").bind(Primitive::scan, p, in, eq.name, {r.backward_body});
  // out: ct_c (nc), ct_k for floating k, ct_xs (nx).
  std::vector<Tensor> result(r.inputs.size());
  for (size_t i = 0; i < nc; ++i) result[i] = out[i];
  for (size_t i = 0; i < nx; ++i) result[nc + i] = out[nc + r.float_consts.size() + i];
  for (size_t j = 0; j < r.float_consts.size(); ++j) result[nc + nx + r.float_consts[j]] = out[nc + j];
  return result;
}

}  // namespace

const ControlFlowVjp kScanVjp{scan_forward, scan_backward};

}  // namespace ferry::transforms
