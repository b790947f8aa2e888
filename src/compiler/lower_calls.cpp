#include "compiler/lower_calls.h"

#include <fmt/format.h>

#include "ferry/error.h"
#include "prims/registry.h"

namespace ferry::compiler {
namespace {

bool has_calls(const ir::Program& p) {
  for (const ir::Equation& eq : p.equations) {
    if (eq.prim == Primitive::custom_vjp || eq.prim == Primitive::cond) return true;
    for (const auto& b : eq.subprograms)
      if (has_calls(*b)) return true;
  }
  return false;
}

std::shared_ptr<const ir::Program> lower(const std::shared_ptr<const ir::Program>& program, bool top_level);

// Builds the lowered program: values are renamed from the source program's as they are emitted.
class Lowering {
 public:
  Lowering(const ir::Program& source, bool top_level) : top_level_(top_level) {
    out_ = std::make_shared<ir::Program>();
    out_->name = source.name;
    std::vector<ir::ValueId> inputs;
    for (ir::ValueId v : source.inputs) inputs.push_back(out_->add_value(source.type(v)));
    out_->inputs = inputs;
    std::vector<ir::ValueId> outs = inline_program(source, inputs, nullptr);
    out_->outputs = outs;
  }
  std::shared_ptr<const ir::Program> result() const { return out_; }

 private:
  // Emits `program`'s equations on `inputs`; `call` (when inlining one) lends its annotations.
  std::vector<ir::ValueId> inline_program(const ir::Program& program, const std::vector<ir::ValueId>& inputs,
                                          const ir::Equation* call) {
    if (inputs.size() != program.inputs.size())
      throw Error(ErrorCode::internal, fmt::format("lower_calls: {} takes {} inputs, got {}", program.name,
                                                   program.inputs.size(), inputs.size()));
    std::vector<ir::ValueId> env(program.values.size(), -1);
    for (size_t i = 0; i < inputs.size(); ++i) env[static_cast<size_t>(program.inputs[i])] = inputs[i];
    for (const ir::Equation& eq : program.equations) {
      std::vector<ir::ValueId> in;
      for (ir::ValueId v : eq.inputs) in.push_back(env[static_cast<size_t>(v)]);
      std::vector<ir::ValueId> out;
      if (eq.prim == Primitive::custom_vjp) {
        out = inline_program(*eq.subprograms.at(0), in, &lend(eq, call));
      } else if (eq.prim == Primitive::cond) {
        out = lower_cond(eq, in, call);
      } else {
        ir::Equation copy = eq;  // every annotation comes along
        copy.inputs = in;
        for (auto& body : copy.subprograms) body = lower(body, /*top_level=*/false);
        copy.outputs.clear();
        for (ir::ValueId v : eq.outputs) copy.outputs.push_back(out_->add_value(program.type(v)));
        out = copy.outputs;
        push(std::move(copy), call);
      }
      for (size_t i = 0; i < out.size(); ++i) env[static_cast<size_t>(eq.outputs[i])] = out[i];
    }
    std::vector<ir::ValueId> outs;
    for (ir::ValueId v : program.outputs) outs.push_back(env[static_cast<size_t>(v)]);
    return outs;
  }

  // Every branch inlined, then per output the taken branch's value: bodies are (false, true) for a
  // bool predicate, (case 0, 1, ...) for an i32 index (the last for any index above).
  std::vector<ir::ValueId> lower_cond(const ir::Equation& eq, const std::vector<ir::ValueId>& in, const ir::Equation* call) {
    const ir::Equation& lent = lend(eq, call);
    const std::vector<ir::ValueId> operands(in.begin() + 1, in.end());
    std::vector<std::vector<ir::ValueId>> branch_outs;
    for (const auto& b : eq.subprograms) branch_outs.push_back(inline_program(*b, operands, &lent));
    const ir::ValueId which = in.at(0);
    const bool by_bool = out_->type(which).dtype == DType::boolean;
    std::vector<ir::ValueId> out;
    for (size_t k = 0; k < branch_outs.at(0).size(); ++k) {
      ir::ValueId r = branch_outs.back()[k];
      if (by_bool) {
        if (branch_outs.size() == 2) r = emit(Primitive::select, ir::NoParams{}, {which, branch_outs[1][k], branch_outs[0][k]}, lent);
      } else {
        for (size_t i = branch_outs.size() - 1; i-- > 0;) {
          const ir::ValueId idx = emit(Primitive::constant, ir::ConstantParams{static_cast<double>(i), DType::i32, {}}, {}, lent);
          const ir::ValueId taken = emit(i == 0 ? Primitive::le : Primitive::eq, ir::NoParams{}, {which, idx}, lent);
          r = emit(Primitive::select, ir::NoParams{}, {taken, branch_outs[i][k], r}, lent);
        }
      }
      out.push_back(r);
    }
    return out;
  }

  // The annotations a call's inlined equations take: the call's own, or-ed with those of the call
  // it was itself inlined from.
  const ir::Equation& lend(const ir::Equation& eq, const ir::Equation* call) {
    lent_.push_back(std::make_unique<ir::Equation>());
    ir::Equation& l = *lent_.back();
    l.rematerialized = eq.rematerialized || (call && call->rematerialized);
    l.automatic = eq.automatic || (call && call->automatic);
    l.decision = eq.decision.kind != ir::RematDecision::Kind::none || !call ? eq.decision : call->decision;
    return l;
  }

  // A new equation (the selects of a cond), annotated as the call.
  ir::ValueId emit(Primitive prim, ir::Params params, std::vector<ir::ValueId> inputs, const ir::Equation& call) {
    std::vector<ir::Type> in;
    for (ir::ValueId v : inputs) in.push_back(out_->type(v));
    const std::vector<ir::Type> types = prims::infer_types(prim, params, in);
    ir::Equation eq;
    eq.prim = prim;
    eq.params = std::move(params);
    eq.inputs = std::move(inputs);
    eq.outputs.push_back(out_->add_value(types.at(0)));
    const ir::ValueId v = eq.outputs[0];
    push(std::move(eq), &call);
    return v;
  }

  void push(ir::Equation eq, const ir::Equation* call) {
    if (call) {
      eq.rematerialized = eq.rematerialized || call->rematerialized;
      eq.automatic = eq.automatic || call->automatic;
      if (eq.decision.kind == ir::RematDecision::Kind::none) eq.decision = call->decision;
      if (top_level_) eq.decision = {};  // spent (see the header)
    }
    out_->equations.push_back(std::move(eq));
  }

  bool top_level_;
  std::shared_ptr<ir::Program> out_;
  std::vector<std::unique_ptr<ir::Equation>> lent_;
};

std::shared_ptr<const ir::Program> lower(const std::shared_ptr<const ir::Program>& program, bool top_level) {
  if (!has_calls(*program)) return program;
  return Lowering(*program, top_level).result();
}

}  // namespace

std::shared_ptr<const ir::Program> lower_calls(const std::shared_ptr<const ir::Program>& program) {
  return lower(program, /*top_level=*/true);
}

}  // namespace ferry::compiler
