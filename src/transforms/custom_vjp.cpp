// custom_vjp: the equation with bodies (f, fwd, bwd), and its forward/backward pair. The bodies all
// take the equation's operands: the arguments, then every value f, fwd or bwd captured. fwd also
// passes bwd's captured values on as residuals, so bwd needs nothing but residuals and cotangents.
#include "ferry/custom_vjp.h"

#include <any>

#include <fmt/format.h>

#include "ferry/error.h"
#include "trace/tracer.h"
#include "transforms/emit.h"
#include "transforms/linearize.h"

namespace ferry {
namespace {

[[noreturn]] void invalid(const std::string& msg) { throw Error(ErrorCode::invalid_argument, msg); }

// Zeros of a type, in its memory kind.
Tensor zeros_of(const ir::Type& t) {
  Tensor z = constant(0.0, t.shape, t.dtype);
  return t.kind == MemoryKind::device ? z : device_put(z, t.kind);
}

std::vector<Tensor> slice_of(const std::vector<Tensor>& v, size_t from, size_t count) {
  return {v.begin() + static_cast<std::ptrdiff_t>(from), v.begin() + static_cast<std::ptrdiff_t>(from + count)};
}

}  // namespace

namespace detail {

std::vector<Tensor> custom_vjp_impl(const LeafFn& f, const FwdLeafFn& fwd, const BwdLeafFn& bwd,
                                    const std::vector<Tensor>& args) {
  using transforms::ClosedProgram;
  using transforms::trace_closed;
  const std::vector<ir::Type> arg_types = transforms::defined_types(args, "custom_vjp", "argument");
  const size_t na = args.size();
  ClosedProgram cf = trace_closed("custom_vjp_f", arg_types, [&](const std::vector<Tensor>& in) {
    std::vector<Tensor> out = f(in);
    transforms::defined_types(out, "custom_vjp", "output of f");
    return out;
  });
  const size_t no = cf.program->outputs.size();
  size_t nr = 0;
  ClosedProgram cfwd = trace_closed("custom_vjp_fwd", arg_types, [&](const std::vector<Tensor>& in) {
    auto [out, res] = fwd(in);
    transforms::defined_types(out, "custom_vjp", "output of fwd");
    transforms::defined_types(res, "custom_vjp", "residual");
    nr = res.size();
    if (out.size() != no) invalid(fmt::format("custom_vjp: fwd returns {} outputs, f {}", out.size(), no));
    out.insert(out.end(), res.begin(), res.end());
    return out;
  });
  std::vector<ir::Type> out_types, res_types;
  for (size_t i = 0; i < no; ++i) {
    out_types.push_back(cf.program->type(cf.program->outputs[i]));
    if (cfwd.program->type(cfwd.program->outputs[i]) != out_types.back())
      invalid(fmt::format("custom_vjp: fwd's output {} is {}, f's is {}", i,
                          ir::to_string(cfwd.program->type(cfwd.program->outputs[i])), ir::to_string(out_types.back())));
  }
  for (size_t i = 0; i < nr; ++i) res_types.push_back(cfwd.program->type(cfwd.program->outputs[no + i]));
  std::vector<ir::Type> bwd_types = res_types;
  bwd_types.insert(bwd_types.end(), out_types.begin(), out_types.end());
  ClosedProgram cbwd = trace_closed("custom_vjp_bwd", bwd_types, [&](const std::vector<Tensor>& in) {
    std::vector<Tensor> cts = bwd(slice_of(in, 0, nr), slice_of(in, nr, no));
    if (cts.size() != na)
      invalid(fmt::format("custom_vjp: bwd returns {} cotangents for {} arguments", cts.size(), na));
    return cts;
  });

  // Operands: arguments, then the captures of f, fwd and bwd.
  std::vector<Tensor> operands = args;
  const size_t cf_at = operands.size();
  operands.insert(operands.end(), cf.captures.begin(), cf.captures.end());
  const size_t cfwd_at = operands.size();
  operands.insert(operands.end(), cfwd.captures.begin(), cfwd.captures.end());
  const size_t cbwd_at = operands.size();
  operands.insert(operands.end(), cbwd.captures.begin(), cbwd.captures.end());
  const std::vector<ir::Type> op_types = transforms::defined_types(operands, "custom_vjp", "operand");
  const size_t nbc = cbwd.captures.size();

  auto with = [&](const std::vector<Tensor>& in, size_t from, size_t count) {
    std::vector<Tensor> v = slice_of(in, 0, na);
    std::vector<Tensor> c = slice_of(in, from, count);
    v.insert(v.end(), c.begin(), c.end());
    return v;
  };
  ClosedProgram f_body = trace_closed("custom_vjp_f", op_types, [&](const std::vector<Tensor>& in) {
    return transforms::emit(*cf.program, with(in, cf_at, cf.captures.size()));
  });
  ClosedProgram fwd_body = trace_closed("custom_vjp_fwd", op_types, [&](const std::vector<Tensor>& in) {
    std::vector<Tensor> out = transforms::emit(*cfwd.program, with(in, cfwd_at, cfwd.captures.size()));
    for (size_t i = 0; i < nbc; ++i) out.push_back(in[cbwd_at + i]);  // bwd's captures travel as residuals
    return out;
  });
  std::vector<ir::Type> bwd_in = res_types;
  for (size_t i = 0; i < nbc; ++i) bwd_in.push_back(op_types[cbwd_at + i]);
  bwd_in.insert(bwd_in.end(), out_types.begin(), out_types.end());
  ClosedProgram bwd_body = trace_closed("custom_vjp_bwd", bwd_in, [&](const std::vector<Tensor>& in) {
    std::vector<Tensor> v = slice_of(in, 0, nr);
    std::vector<Tensor> cts = slice_of(in, nr + nbc, no);
    v.insert(v.end(), cts.begin(), cts.end());
    std::vector<Tensor> caps = slice_of(in, nr, nbc);
    v.insert(v.end(), caps.begin(), caps.end());
    std::vector<Tensor> out = transforms::emit(*cbwd.program, v);
    for (size_t i = 0; i < na; ++i) {
      if (!out[i].defined()) {
        out[i] = zeros_of(op_types[i]);
        continue;
      }
      if (transforms::type_of(out[i]) != op_types[i])
        invalid(fmt::format("custom_vjp: bwd's cotangent {} is {} but the argument is {}", i, out[i].type_string(),
                            ir::to_string(op_types[i])));
    }
    for (size_t i = na; i < operands.size(); ++i) out.push_back(zeros_of(op_types[i]));
    return out;
  });
  for (const ClosedProgram* c : {&f_body, &fwd_body, &bwd_body})
    if (!c->captures.empty()) throw Error(ErrorCode::internal, "custom_vjp: a wrapped body captured values");
  return current_tracer("custom_vjp")
      .bind(Primitive::custom_vjp, ir::NoParams{}, operands, {}, {f_body.program, fwd_body.program, bwd_body.program});
}

}  // namespace detail

namespace transforms {
namespace {

struct CustomVjpResiduals {
  std::vector<Tensor> residuals, outputs;
};

// Forward: fwd's equations, each keeping the decision an enclosing checkpoint's policy gave it.
std::vector<Tensor> custom_vjp_forward(const ir::Equation& eq, const std::vector<Tensor>& in, std::any& residuals) {
  const ir::Program& fwd = *eq.subprograms.at(1);
  const size_t no = eq.subprograms.at(0)->outputs.size();
  std::vector<Tensor> out = emit(fwd, in);  // replayed with their decisions
  auto r = std::make_shared<CustomVjpResiduals>();
  r->outputs = slice_of(out, 0, no);
  r->residuals = slice_of(out, no, out.size() - no);
  residuals = std::shared_ptr<const CustomVjpResiduals>(r);
  return r->outputs;
}

std::vector<Tensor> custom_vjp_backward(const ir::Equation& eq, const std::any& residuals,
                                        const std::vector<Tensor>& cts) {
  const auto& r = *std::any_cast<std::shared_ptr<const CustomVjpResiduals>>(residuals);
  std::vector<Tensor> in = r.residuals;
  for (size_t i = 0; i < cts.size(); ++i) in.push_back(cts[i].defined() ? cts[i] : zeros_like(r.outputs[i]));
  return emit(*eq.subprograms.at(2), in);
}

}  // namespace

const ControlFlowVjp kCustomVjpVjp{custom_vjp_forward, custom_vjp_backward};

}  // namespace transforms
}  // namespace ferry
