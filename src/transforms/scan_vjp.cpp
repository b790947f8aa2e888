// The VJP of scan.
//
// The body's joint program J(c, x, k, ct_c', ct_y) = (c', y, ct_c, ct_x, ct_k) is traced once by
// linearizing the body. Its equations split in two: those that do not depend on any cotangent
// (the forward part) and those that do (the backward part). Values the backward part needs from the
// forward part are the residuals:
// - per-step values are stacked along a new leading axis by the forward scan (a carry input is
//   stacked too: it is the carry before the step), except the x slices, read again from xs;
// - loop constants k are passed to the backward scan as constants, and loop-invariant forward values
//   (functions of k and literals only) are recomputed in the backward body instead of being stacked.
// The forward scan runs the forward part and also outputs the stacked residuals; the backward scan
// runs the other way, carrying ct_c and the accumulated ct_k, and stacks ct_x.
#include <any>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "compiler/dce.h"
#include "ferry/error.h"
#include "ir/params.h"
#include "trace/tracer.h"
#include "transforms/emit.h"
#include "transforms/linearize.h"

namespace ferry::transforms {
namespace {

using ir::ValueId;

// Copies equations of a source program into a new one, renumbering values.
class ProgramCopier {
 public:
  ProgramCopier(const ir::Program& src, std::string name) : src_(src), map_(src.values.size(), -1) {
    out_ = std::make_shared<ir::Program>();
    out_->name = std::move(name);
  }
  ValueId add_input(ValueId src_value) { return add_input_of_type(src_.type(src_value), src_value); }
  ValueId add_input_of_type(const ir::Type& t, ValueId src_value = -1) {
    ValueId v = out_->add_value(t);
    out_->inputs.push_back(v);
    if (src_value >= 0) map_[static_cast<size_t>(src_value)] = v;
    return v;
  }
  bool mapped(ValueId src_value) const { return map_[static_cast<size_t>(src_value)] >= 0; }
  ValueId map(ValueId src_value) const {
    ValueId v = map_[static_cast<size_t>(src_value)];
    if (v < 0) throw Error(ErrorCode::internal, fmt::format("scan vjp: value %{} is not available in {}", src_value, out_->name));
    return v;
  }
  void copy(const ir::Equation& eq) {
    ir::Equation e = eq;
    for (ValueId& v : e.inputs) v = map(v);
    for (ValueId& v : e.outputs) {
      ValueId nv = out_->add_value(src_.type(v));
      map_[static_cast<size_t>(v)] = nv;
      v = nv;
    }
    out_->equations.push_back(std::move(e));
  }
  // out = a + b, both values of the new program.
  ValueId add(ValueId a, ValueId b) {
    ir::Equation e;
    e.prim = Primitive::add;
    e.params = ir::NoParams{};
    e.inputs = {a, b};
    e.outputs = {out_->add_value(out_->type(a))};
    out_->equations.push_back(e);
    return e.outputs[0];
  }
  ir::Program& program() { return *out_; }
  std::shared_ptr<const ir::Program> finish() {
    compiler::eliminate_dead_code(*out_);
    return out_;
  }

 private:
  const ir::Program& src_;
  std::vector<ValueId> map_;
  std::shared_ptr<ir::Program> out_;
};

struct ScanResiduals {
  ir::ScanParams params;
  std::shared_ptr<const ir::Program> backward_body;
  std::vector<Tensor> stacked;     // residuals stacked by the forward scan
  std::vector<Tensor> xs_used;     // xs the backward body reads again
  std::vector<Tensor> consts_used;  // loop constants the backward body reads
  std::vector<size_t> float_consts;  // indices (into k) whose cotangents are accumulated
  std::vector<Tensor> inputs;       // the scan's inputs
  std::vector<Tensor> outputs;      // the scan's outputs
};

std::vector<Tensor> scan_forward(const ir::Equation& eq, const std::vector<Tensor>& in, std::any& residuals) {
  const auto& params = std::get<ir::ScanParams>(eq.params);
  const ir::Program& body = *eq.subprograms.at(0);
  const size_t nc = static_cast<size_t>(params.num_carry), nx = static_cast<size_t>(params.num_xs);
  const size_t n_in = body.inputs.size(), nk = n_in - nc - nx, n_out = body.outputs.size(), ny = n_out - nc;

  // 1. The joint program.
  std::vector<ir::Type> joint_types;
  for (ValueId v : body.inputs) joint_types.push_back(body.type(v));
  for (ValueId v : body.outputs) joint_types.push_back(body.type(v));
  auto body_ptr = eq.subprograms[0];
  ClosedProgram joint = trace_closed("scan_joint", joint_types, [&](const std::vector<Tensor>& jin) {
    std::vector<Tensor> primals(jin.begin(), jin.begin() + static_cast<std::ptrdiff_t>(n_in));
    std::vector<Tensor> cts(jin.begin() + static_cast<std::ptrdiff_t>(n_in), jin.end());
    Linearization lin(body_ptr, primals);
    std::vector<Tensor> out = lin.outputs();
    std::vector<Tensor> in_cts = lin.backward(cts);
    for (size_t j = 0; j < n_in; ++j) out.push_back(in_cts[j].defined() ? in_cts[j] : zeros_like(primals[j]));
    return out;
  });
  if (!joint.captures.empty()) throw Error(ErrorCode::internal, "scan vjp: the joint body captured outer values");
  const ir::Program& J = *joint.program;

  // 2. Partition: tangent (depends on a cotangent input) or not; invariant (depends only on k).
  std::vector<char> tangent(J.values.size(), 0), invariant(J.values.size(), 0);
  for (size_t i = n_in; i < J.inputs.size(); ++i) tangent[static_cast<size_t>(J.inputs[i])] = 1;
  for (size_t i = nc + nx; i < n_in; ++i) invariant[static_cast<size_t>(J.inputs[i])] = 1;
  std::vector<char> eq_tangent(J.equations.size(), 0), eq_invariant(J.equations.size(), 0);
  for (size_t e = 0; e < J.equations.size(); ++e) {
    const ir::Equation& je = J.equations[e];
    bool t = false, inv = true;
    for (ValueId v : je.inputs) {
      t = t || tangent[static_cast<size_t>(v)];
      inv = inv && invariant[static_cast<size_t>(v)];
    }
    eq_tangent[e] = t;
    eq_invariant[e] = !t && inv;
    for (ValueId v : je.outputs) {
      tangent[static_cast<size_t>(v)] = t;
      invariant[static_cast<size_t>(v)] = eq_invariant[e];
    }
  }
  // Values the backward body reads that it does not compute itself.
  std::vector<char> needed(J.values.size(), 0);
  for (size_t e = 0; e < J.equations.size(); ++e)
    if (eq_tangent[e])
      for (ValueId v : J.equations[e].inputs) needed[static_cast<size_t>(v)] = 1;
  for (size_t i = n_out; i < J.outputs.size(); ++i) needed[static_cast<size_t>(J.outputs[i])] = 1;
  // Invariant equations feeding the backward body are recomputed there; mark their inputs needed.
  std::vector<char> recompute(J.equations.size(), 0);
  for (size_t e = J.equations.size(); e-- > 0;) {
    if (!eq_invariant[e]) continue;
    bool used = false;
    for (ValueId v : J.equations[e].outputs) used = used || needed[static_cast<size_t>(v)];
    if (!used) continue;
    recompute[e] = 1;
    for (ValueId v : J.equations[e].inputs) needed[static_cast<size_t>(v)] = 1;
  }
  std::vector<char> is_input(J.values.size(), 0);
  for (ValueId v : J.inputs) is_input[static_cast<size_t>(v)] = 1;
  std::vector<ValueId> stacked;  // J values stacked by the forward scan, in order
  for (size_t v = 0; v < J.values.size(); ++v) {
    if (!needed[v] || tangent[v] || invariant[v]) continue;
    bool is_x = false;
    for (size_t i = nc; i < nc + nx; ++i) is_x = is_x || J.inputs[i] == static_cast<ValueId>(v);
    if (!is_x) stacked.push_back(static_cast<ValueId>(v));
  }

  // 3. The forward body: the non-tangent equations; outputs c', y, then the stacked residuals.
  ProgramCopier fwd(J, "scan_fwd_body");
  for (size_t i = 0; i < n_in; ++i) fwd.add_input(J.inputs[i]);
  for (size_t e = 0; e < J.equations.size(); ++e)
    if (!eq_tangent[e]) fwd.copy(J.equations[e]);
  for (size_t i = 0; i < n_out; ++i) fwd.program().outputs.push_back(fwd.map(J.outputs[i]));
  for (ValueId v : stacked) fwd.program().outputs.push_back(fwd.map(v));
  std::shared_ptr<const ir::Program> fwd_body = fwd.finish();

  // 4. The backward body. carry: ct_c, then accumulated ct_k for floating k; xs: stacked residuals,
  // x slices read again, ct_y; consts: the k it reads.
  auto res = std::make_shared<ScanResiduals>();
  res->params = params;
  ProgramCopier bwd(J, "scan_bwd_body");
  for (size_t i = 0; i < nc; ++i) bwd.add_input(J.inputs[n_in + i]);
  std::vector<ValueId> acc;
  for (size_t i = 0; i < nk; ++i) {
    ValueId k = J.inputs[nc + nx + i];
    if (!is_floating(J.type(k).dtype)) continue;
    res->float_consts.push_back(i);
    acc.push_back(bwd.add_input_of_type(J.type(k)));
  }
  for (ValueId v : stacked) bwd.add_input(v);
  std::vector<size_t> xs_used;
  for (size_t i = nc; i < nc + nx; ++i)
    if (needed[static_cast<size_t>(J.inputs[i])]) {
      bwd.add_input(J.inputs[i]);
      xs_used.push_back(i - nc);
    }
  for (size_t i = 0; i < ny; ++i) bwd.add_input(J.inputs[n_in + nc + i]);
  std::vector<size_t> consts_used;
  for (size_t i = 0; i < nk; ++i)
    if (needed[static_cast<size_t>(J.inputs[nc + nx + i])]) {
      bwd.add_input(J.inputs[nc + nx + i]);
      consts_used.push_back(i);
    }
  for (size_t e = 0; e < J.equations.size(); ++e)
    if (eq_tangent[e] || recompute[e]) bwd.copy(J.equations[e]);
  ir::Program& bp = bwd.program();
  for (size_t i = 0; i < nc; ++i) bp.outputs.push_back(bwd.map(J.outputs[n_out + i]));
  for (size_t j = 0; j < res->float_consts.size(); ++j)
    bp.outputs.push_back(bwd.add(acc[j], bwd.map(J.outputs[n_out + nc + nx + res->float_consts[j]])));
  for (size_t i = 0; i < nx; ++i) bp.outputs.push_back(bwd.map(J.outputs[n_out + nc + i]));
  res->backward_body = bwd.finish();

  // 5. The forward scan.
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

const ControlFlowVjp kScanVjp{scan_forward, scan_backward};

}  // namespace

const ControlFlowVjp* control_flow_vjp(Primitive p) {
  if (p == Primitive::scan) return &kScanVjp;
  return nullptr;
}

}  // namespace ferry::transforms
