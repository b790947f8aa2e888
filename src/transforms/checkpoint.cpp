// checkpoint's front end: trace the function once, record the policy's decision on every equation
// of its body (scan bodies included, nested checkpoints keeping their own), bind one checkpoint
// equation. Also the Equation values policies see, and checkpoint_name.
#include <fmt/format.h>

#include "ferry/checkpoint.h"
#include "ferry/error.h"
#include "ir/params_text.h"
#include "trace/tracer.h"
#include "transforms/emit.h"
#include "ir/type.h"

namespace ferry {

namespace detail {
struct EquationData {
  Primitive prim = Primitive::add;
  ir::Params params;
  std::string name;  // checkpoint_name's; empty for other equations
  std::vector<ShapeDtype> inputs, outputs;
};
}  // namespace detail

namespace {

std::vector<ShapeDtype> specs(const ir::Program& p, const std::vector<ir::ValueId>& ids) {
  std::vector<ShapeDtype> out;
  for (ir::ValueId v : ids) out.push_back({p.type(v).shape, p.type(v).dtype, p.type(v).kind});
  return out;
}

ir::RematDecision to_ir(const Decision& d) {
  ir::RematDecision r;
  if (std::holds_alternative<Saveable>(d)) r.kind = ir::RematDecision::Kind::save;
  else if (std::holds_alternative<Recompute>(d)) r.kind = ir::RematDecision::Kind::recompute;
  else if (std::holds_alternative<Automatic>(d)) r.kind = ir::RematDecision::Kind::automatic;
  else {
    const auto& o = std::get<Offloadable>(d);
    ir::check_memory_kind(o.src, "checkpoint: a policy's Offloadable src");
    ir::check_memory_kind(o.dst, "checkpoint: a policy's Offloadable dst");
    r.kind = ir::RematDecision::Kind::offload;
    r.src = o.src;
    r.dst = o.dst;
  }
  return r;
}

std::string describe(const ir::Equation& eq, const ir::Program& p) {
  std::string types;
  for (ir::ValueId v : eq.outputs) types += (types.empty() ? "" : ", ") + ir::to_string(p.type(v));
  return fmt::format("{} ({})", primitive_name(eq.prim), types);
}

// The Equation a policy sees: a copy of what it exposes, not a view into the program being
// annotated, so that a policy that keeps it (user code may) never reads a freed program. The copy
// costs a few small allocations per equation, beside the tracing that made the equation.
Equation equation_for_policy(const ir::Equation& eq, const ir::Program& p) {
  auto data = std::make_shared<detail::EquationData>();
  data->prim = eq.prim;
  data->params = eq.params;
  if (eq.prim == Primitive::checkpoint_name) data->name = eq.name;
  data->inputs = specs(p, eq.inputs);
  data->outputs = specs(p, eq.outputs);
  return Equation(std::move(data));
}

// The policy's decision for one equation. A policy is user code: whatever it throws comes out as a
// ferry::Error naming the policy and the equation, and an offload must start from the memory kind
// the value lives in (a src that does not match would otherwise be silently ignored).
ir::RematDecision decide(const Policy& policy, const ir::Equation& eq, const ir::Program& p) {
  auto failed = [&](ErrorCode code, std::string_view what) {
    return Error(code, fmt::format("checkpoint policy '{}' failed on {}: {}", policy.name(), describe(eq, p), what));
  };
  Decision d;
  try {
    d = policy(equation_for_policy(eq, p));
  } catch (const Error& e) {
    throw failed(e.code(), e.message());
  } catch (const std::exception& e) {
    throw failed(ErrorCode::invalid_argument, e.what());
  } catch (...) {
    throw failed(ErrorCode::invalid_argument, "it threw something that is not a std::exception");
  }
  ir::RematDecision r = to_ir(d);
  if (r.kind == ir::RematDecision::Kind::offload)
    for (ir::ValueId v : eq.outputs)
      if (p.type(v).kind != r.src)
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("checkpoint policy '{}' offloads {} from {} to {}, but the value lives in {}", policy.name(),
                                describe(eq, p), memory_kind_name(r.src), memory_kind_name(r.dst),
                                memory_kind_name(p.type(v).kind)));
  return r;
}

// Whether `policy` decides `d` for a checkpoint_name equation because of its name: asked again
// about the same equation without a name, it decides otherwise.
bool decided_by_name(const ir::Equation& eq, const ir::Program& program, const Policy& policy,
                     const ir::RematDecision& d) {
  if (eq.prim != Primitive::checkpoint_name || eq.name.empty()) return false;
  ir::Equation unnamed = eq;
  unnamed.name.clear();
  return decide(policy, unnamed, program) != d;
}

// A copy of `program` with the policy's decision on every equation; scan, custom_vjp and cond bodies
// are annotated too, nested checkpoint bodies keep the decisions of their own policy.
std::shared_ptr<const ir::Program> annotate(const ir::Program& program, const Policy& policy) {
  auto out = std::make_shared<ir::Program>(program);
  for (ir::Equation& eq : out->equations) {
    eq.decision = decide(policy, eq, *out);
    eq.decision.by_name = decided_by_name(eq, *out, policy, eq.decision);
    if (eq.prim == Primitive::scan || eq.prim == Primitive::custom_vjp || eq.prim == Primitive::cond)
      for (auto& body : eq.subprograms) body = annotate(*body, policy);
  }
  return out;
}

}  // namespace

Primitive Equation::primitive() const { return data_->prim; }

DotDims Equation::dot_dims() const {
  const auto* p = std::get_if<ir::DotGeneralParams>(&data_->params);
  if (p == nullptr)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("dot_dims: the equation is {}, not dot_general", primitive_name(primitive())));
  return {p->dims.lhs_contracting, p->dims.rhs_contracting, p->dims.lhs_batch, p->dims.rhs_batch};
}

std::vector<ShapeDtype> Equation::input_types() const { return data_->inputs; }
std::vector<ShapeDtype> Equation::output_types() const { return data_->outputs; }

const std::string& Equation::name() const { return data_->name; }

std::string Equation::params_text() const { return ir::params_to_string(data_->params); }

Tensor checkpoint_name(const Tensor& x, const std::string& name) {
  if (name.empty()) throw Error(ErrorCode::invalid_argument, "checkpoint_name: the name is empty");
  if (!x.defined()) throw Error(ErrorCode::invalid_argument, "checkpoint_name: the value is an undefined Tensor");
  return detail::current_tracer("checkpoint_name").bind1(Primitive::checkpoint_name, ir::NoParams{}, {x}, name);
}

namespace detail {

std::vector<Tensor> checkpoint_impl(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                                    const std::vector<Tensor>& args, const Policy& policy, bool prevent_cse) {
  std::vector<ir::Type> types;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].defined())
      throw Error(ErrorCode::invalid_argument, fmt::format("checkpoint: argument {} is an undefined Tensor", i));
    types.push_back(transforms::type_of(args[i]));
  }
  // Undefined results ("none") stay outside the equation and come back undefined.
  std::vector<char> defined;
  transforms::ClosedProgram closed = transforms::trace_closed("checkpoint_body", types, [&](const std::vector<Tensor>& in) {
    std::vector<Tensor> out, kept;
    out = fn(in);
    for (const Tensor& t : out) {
      defined.push_back(t.defined());
      if (t.defined()) kept.push_back(t);
    }
    return kept;
  });
  std::vector<Tensor> inputs = args;
  inputs.insert(inputs.end(), closed.captures.begin(), closed.captures.end());
  if (inputs.empty()) throw Error(ErrorCode::invalid_argument, "checkpoint: the function has no inputs to save");
  std::vector<Tensor> outs = current_tracer("checkpoint")
                                 .bind(Primitive::checkpoint, ir::CheckpointParams{prevent_cse}, inputs, policy.name(),
                                       {annotate(*closed.program, policy)});
  std::vector<Tensor> result;
  size_t next = 0;
  for (char d : defined) result.push_back(d ? outs[next++] : Tensor());
  return result;
}

}  // namespace detail
}  // namespace ferry
