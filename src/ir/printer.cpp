#include "ir/printer.h"

#include <fmt/format.h>

#include "ir/params_text.h"

namespace ferry::ir {
namespace {

// Numbers one program's values in definition order.
class Namer {
 public:
  explicit Namer(const Program& p) : program_(p), numbers_(p.values.size(), -1) {}

  std::string define(ValueId v) {
    if (!in_range(v)) return fmt::format("%?{}", v);
    numbers_[static_cast<size_t>(v)] = next_++;
    return use(v);
  }
  std::string use(ValueId v) const {
    if (!in_range(v) || numbers_[static_cast<size_t>(v)] < 0) return fmt::format("%?{}", v);
    return fmt::format("%{}", numbers_[static_cast<size_t>(v)]);
  }
  std::string type(ValueId v) const { return in_range(v) ? to_string(program_.type(v)) : "<no type>"; }

 private:
  bool in_range(ValueId v) const { return v >= 0 && static_cast<size_t>(v) < numbers_.size(); }

  const Program& program_;
  std::vector<int64_t> numbers_;
  int64_t next_ = 0;
};

std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string prim_name(Primitive p) {
  if (static_cast<int>(p) >= kNumOps) return fmt::format("<primitive #{}>", static_cast<int>(p));
  return std::string(primitive_name(p));
}

void print_program(std::string& out, const Program& p, int indent) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  Namer names(p);

  std::vector<std::string> inputs;
  for (ValueId v : p.inputs) {
    std::string n = names.define(v);
    inputs.push_back(fmt::format("{}: {}", n, names.type(v)));
  }
  out += fmt::format("{}program @{}({}) {{\n", pad, p.name, fmt::join(inputs, ", "));

  for (const Equation& eq : p.equations) {
    // Operands first: they refer to values defined before this equation.
    std::vector<std::string> operands, outputs, types;
    for (ValueId v : eq.inputs) operands.push_back(names.use(v));
    for (ValueId v : eq.outputs) {
      outputs.push_back(names.define(v));
      types.push_back(names.type(v));
    }
    out += fmt::format("{}  {} = {}{}", pad, fmt::join(outputs, ", "), prim_name(eq.prim),
                       params_to_string(eq.params));
    if (!operands.empty()) out += fmt::format(" {}", fmt::join(operands, ", "));
    out += fmt::format(" : {}", fmt::join(types, ", "));
    if (!eq.name.empty()) out += " @" + quoted(eq.name);
    switch (eq.decision.kind) {
      case RematDecision::Kind::none: break;
      case RematDecision::Kind::save: out += " !save"; break;
      case RematDecision::Kind::recompute: out += " !recompute"; break;
      case RematDecision::Kind::offload:
        out += fmt::format(" !offload({},{})", memory_kind_name(eq.decision.src), memory_kind_name(eq.decision.dst));
        break;
      case RematDecision::Kind::automatic: out += " !automatic"; break;
    }
    if (eq.rematerialized) out += " !remat";
    if (eq.automatic) out += " !auto";
    if (!eq.subprograms.empty()) {
      out += " {\n";
      for (const auto& sub : eq.subprograms) {
        if (sub) print_program(out, *sub, indent + 4);
        else out += fmt::format("{}    <null program>\n", pad);
      }
      out += pad + "  }";
    }
    out += "\n";
  }

  std::vector<std::string> results;
  for (ValueId v : p.outputs) results.push_back(names.use(v));
  out += fmt::format("{}  return{}{}\n{}}}\n", pad, results.empty() ? "" : " ", fmt::join(results, ", "), pad);
}

}  // namespace

std::string equation_label(const Program& p, size_t e) {
  if (e >= p.equations.size()) return fmt::format("<equation {} of {}>", e, p.equations.size());
  size_t number = p.inputs.size();
  for (size_t i = 0; i < e; ++i) number += p.equations[i].outputs.size();
  const Equation& eq = p.equations[e];
  const size_t n = eq.outputs.size();
  if (n == 0) return fmt::format("{} (equation {}, no outputs)", prim_name(eq.prim), e);
  if (n == 1) return fmt::format("%{} = {}", number, prim_name(eq.prim));
  if (n == 2) return fmt::format("%{}, %{} = {}", number, number + 1, prim_name(eq.prim));
  return fmt::format("%{}, ..., %{} = {}", number, number + n - 1, prim_name(eq.prim));
}

std::string print(const Program& p) {
  std::string out;
  print_program(out, p, 0);
  return out;
}

}  // namespace ferry::ir
