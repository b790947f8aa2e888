#include "ir/verifier.h"

#include <fmt/format.h>

#include <unordered_map>

#include "ferry/error.h"
#include "ir/echo.h"
#include "ir/limits.h"
#include "ir/printer.h"

namespace ferry::ir {
namespace {

std::string type_list(const std::vector<Type>& types) {
  std::string out = "(";
  out += echo_list(types.size(), [&](size_t i) { return to_string(types[i]); });
  return out + ")";
}

// Where a problem is: the program (with the path of subprograms that leads to it) and, inside an
// equation, its index and primitive. Messages are built only on failure, keeping the check cheap.
// Equations are named as the printed program shows them ("%17 = tanh", see equation_label).
struct Site {
  const std::string& program;
  int64_t equation = -1;
  Primitive prim = Primitive::add;
  const Program* p = nullptr;  // to name the equation

  std::string str() const {
    if (equation < 0) return program;
    if (p == nullptr) return fmt::format("{}: equation {} ({})", program, equation, name_of(prim));
    return fmt::format("{}: {}", program, equation_label(*p, static_cast<size_t>(equation)));
  }
  [[noreturn]] void fail(const std::string& problem) const {
    throw Error(ErrorCode::invalid_argument, fmt::format("{}: {}", str(), problem));
  }
};

class Verifier {
 public:
  explicit Verifier(const TypeRule& types) : types_(types) {}

  // `where` is "program 'main'" or the path to a subprogram; `top_level`, whether p is the program
  // verify() was given rather than a body.
  void program(const Program& p, const std::string& where, bool top_level = false) {
    auto [it, inserted] = state_.try_emplace(&p, State::in_progress);
    if (!inserted) {
      if (it->second == State::in_progress) Site{where}.fail("contains itself as a subprogram");
      return;  // already verified through another equation
    }
    Site site{where};
    for (size_t v = 0; v < p.values.size(); ++v) {
      const std::string problem = size_problem(p.values[v].dtype, p.values[v].shape);
      if (!problem.empty()) site.fail(fmt::format("value %{}: type {} {}", v, to_string(p.values[v]), problem));
    }
    std::vector<bool> defined(p.values.size(), false);
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      check_id(p, p.inputs[i], site, "input", i);
      define(defined, p.inputs[i], site, "input", i);
    }
    for (size_t i = 0; i < p.equations.size(); ++i) equation(p, i, defined, where, top_level);
    copy_pairs(p, where);
    for (size_t i = 0; i < p.outputs.size(); ++i) {
      ValueId v = p.outputs[i];
      check_id(p, v, site, "output", i);
      if (!defined[static_cast<size_t>(v)])
        site.fail(fmt::format("output {} is %{}, which no input or equation defines", i, v));
    }
    state_[&p] = State::done;  // re-looked up: recursion may have rehashed the map
  }

 private:
  enum class State { in_progress, done };

  // copy_done(dest, x) waits for a copy_start of x in the same program, and each copy_start is
  // waited for exactly once: only through that pair does the plan keep x alive and unchanged while
  // the copy reads it (the compile-and-run fuzzer found a copy_done naming another source). The
  // destination a copy_start defines is read by its copy_done alone: before the copy_done the copy
  // may still be writing it, and after it the copy_done's result is the value to read.
  void copy_pairs(const Program& p, const std::string& where) {
    std::vector<int64_t> start_of(p.values.size(), -1);
    std::vector<int> waits(p.equations.size(), 0);
    for (size_t i = 0; i < p.equations.size(); ++i) {
      const Equation& eq = p.equations[i];
      Site site{where, static_cast<int64_t>(i), eq.prim, &p};
      for (size_t k = eq.prim == ir::op::copy_done ? 1 : 0; k < eq.inputs.size(); ++k)
        if (start_of[static_cast<size_t>(eq.inputs[k])] >= 0)
          site.fail(fmt::format("operand {} (%{}) is the destination of a copy_start, which only its copy_done may read",
                                k, eq.inputs[k]));
      if (eq.prim == ir::op::copy_start) start_of[static_cast<size_t>(eq.outputs[0])] = static_cast<int64_t>(i);
      if (eq.prim != ir::op::copy_done) continue;
      int64_t s = start_of[static_cast<size_t>(eq.inputs[0])];
      if (s < 0) site.fail(fmt::format("operand 0 (%{}) is not the result of a copy_start", eq.inputs[0]));
      ValueId source = p.equations[static_cast<size_t>(s)].inputs[0];
      if (source != eq.inputs[1])
        site.fail(fmt::format("waits for the copy of %{} ({}) but names %{} as its source", source,
                              equation_label(p, static_cast<size_t>(s)), eq.inputs[1]));
      if (++waits[static_cast<size_t>(s)] > 1)
        site.fail(fmt::format("waits for the copy of {}, which another copy_done already waited for",
                              equation_label(p, static_cast<size_t>(s))));
    }
    for (size_t i = 0; i < p.outputs.size(); ++i) {
      ValueId v = p.outputs[i];
      if (v >= 0 && static_cast<size_t>(v) < p.values.size() && start_of[static_cast<size_t>(v)] >= 0)
        Site{where}.fail(fmt::format("output {} is %{}, the destination of a copy_start, which only its copy_done may read",
                                     i, v));
    }
    for (size_t i = 0; i < p.equations.size(); ++i)
      if (p.equations[i].prim == ir::op::copy_start && waits[i] == 0)
        Site{where, static_cast<int64_t>(i), ir::op::copy_start, &p}.fail("no copy_done waits for this copy");
  }

  static void check_id(const Program& p, ValueId v, const Site& site, std::string_view role, size_t i) {
    if (v < 0 || static_cast<size_t>(v) >= p.values.size())
      site.fail(fmt::format("{} {} is %{}, out of range (the program has {} values)", role, i, v, p.values.size()));
  }

  static void define(std::vector<bool>& defined, ValueId v, const Site& site, std::string_view role, size_t i) {
    if (defined[static_cast<size_t>(v)])
      site.fail(fmt::format("{} {} defines %{} a second time (values are assigned once)", role, i, v));
    defined[static_cast<size_t>(v)] = true;
  }

  void equation(const Program& p, size_t index, std::vector<bool>& defined, const std::string& where,
                bool top_level) {
    const Equation& eq = p.equations[index];
    if (static_cast<int>(eq.prim) >= kNumOps)
      Site{where}.fail(fmt::format("equation {}: unknown primitive #{}", index, static_cast<int>(eq.prim)));
    Site site{where, static_cast<int64_t>(index), eq.prim, &p};

    std::vector<Type> in;
    in.reserve(eq.inputs.size());
    for (size_t i = 0; i < eq.inputs.size(); ++i) {
      ValueId v = eq.inputs[i];
      check_id(p, v, site, "operand", i);
      if (!defined[static_cast<size_t>(v)]) site.fail(fmt::format("operand {} uses %{} before it is defined", i, v));
      in.push_back(p.type(v));
    }

    for (size_t s = 0; s < eq.subprograms.size(); ++s) {
      const Program* sub = eq.subprograms[s].get();
      if (sub == nullptr) site.fail(fmt::format("subprogram {} is null", s));
      program(*sub, fmt::format("{}: subprogram {}: program '{}'", site.str(), s, echo(sub->name)));
    }

    std::vector<Type> expected;
    try {
      expected = types_(eq, in);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::invalid_argument) throw;
      site.fail(e.message());
    }

    if (eq.outputs.size() != expected.size())
      site.fail(fmt::format("declares {} output(s) but {} produces {}", eq.outputs.size(), name_of(eq.prim),
                            expected.size()));
    bool types_match = true;
    for (size_t i = 0; i < eq.outputs.size(); ++i) {
      ValueId v = eq.outputs[i];
      check_id(p, v, site, "output", i);
      define(defined, v, site, "output", i);
      types_match = types_match && p.type(v) == expected[i];
    }
    annotations(p, eq, site, top_level);
    if (!types_match) {
      std::vector<Type> declared;
      for (ValueId v : eq.outputs) declared.push_back(p.type(v));
      site.fail(fmt::format("declared output types {} differ from the inferred types {}", type_list(declared),
                            type_list(expected)));
    }
  }

  // A decision the policy path would refuse, or one nothing reads, is refused here too: silently
  // ignored, it would look like a plan the program does not have. Differentiation reads decisions
  // from the bodies it partitions (a checkpoint's, the scan, cond and custom_vjp bodies inside one,
  // and what their VJPs make of those), never from the top-level program's own equations.
  static void annotations(const Program& p, const Equation& eq, const Site& site, bool top_level) {
    const RematDecision& d = eq.decision;
    if (d.kind != RematDecision::Kind::none && top_level)
      site.fail("carries a checkpoint policy's decision (!save, !recompute, !offload or !automatic), which only an "
                "equation in a body (a checkpoint's, or a scan, cond or custom_vjp body inside one) can have: "
                "differentiating the checkpoint reads it, and nothing reads it on the top-level program");
    if (d.kind == RematDecision::Kind::offload)
      for (size_t i = 0; i < eq.outputs.size(); ++i)
        if (MemoryKind k = p.type(eq.outputs[i]).kind; k != d.src)
          site.fail(fmt::format("!offload({},{}) offloads from {}, but output {} lives in {}", memory_kind_name(d.src),
                                memory_kind_name(d.dst), memory_kind_name(d.src), i, memory_kind_name(k)));
    if (eq.automatic && !eq.rematerialized)
      site.fail("!auto marks a recomputation (!remat) that the automatic planner may replace; without !remat it has "
                "no effect");
  }

  const TypeRule& types_;
  std::unordered_map<const Program*, State> state_;
};

}  // namespace

void verify(const Program& p, const TypeRule& types) {
  const std::string where = fmt::format("program '{}'", echo(p.name));
  Verifier(types).program(p, where, /*top_level=*/true);
}

}  // namespace ferry::ir
