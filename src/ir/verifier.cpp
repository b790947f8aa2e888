#include "ir/verifier.h"

#include <fmt/format.h>

#include <unordered_map>

#include "ferry/error.h"
#include "ir/printer.h"
#include "prims/registry.h"

namespace ferry::ir {
namespace {

std::string type_list(const std::vector<Type>& types) {
  std::string s;
  for (size_t i = 0; i < types.size(); ++i) s += (i ? ", " : "") + to_string(types[i]);
  return "(" + s + ")";
}

// Too many dimensions, negative sizes or an overflowing element or byte count; empty when the type
// is fine.
std::string_view type_problem(const Type& t) {
  if (t.rank() > kMaxRank) return "more than 32 dimensions (ferry's limit)";
  int64_t n = 1;
  for (int64_t d : t.shape) {
    if (d < 0) return "a negative dimension size";
    if (__builtin_mul_overflow(n, d, &n)) return "more elements than fit in int64";
  }
  int64_t bytes = 0;
  if (__builtin_mul_overflow(n, static_cast<int64_t>(dtype_size(t.dtype)), &bytes))
    return "a byte size that does not fit in int64";
  return {};
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
    if (p == nullptr) return fmt::format("{}: equation {} ({})", program, equation, prims::name_of(prim));
    return fmt::format("{}: {}", program, equation_label(*p, static_cast<size_t>(equation)));
  }
  [[noreturn]] void fail(const std::string& problem) const {
    throw Error(ErrorCode::invalid_argument, fmt::format("{}: {}", str(), problem));
  }
};

class Verifier {
 public:
  // `where` is "program 'main'" or the path to a subprogram.
  void program(const Program& p, const std::string& where) {
    auto [it, inserted] = state_.try_emplace(&p, State::in_progress);
    if (!inserted) {
      if (it->second == State::in_progress) Site{where}.fail("contains itself as a subprogram");
      return;  // already verified through another equation
    }
    Site site{where};
    for (size_t v = 0; v < p.values.size(); ++v) {
      std::string_view problem = type_problem(p.values[v]);
      if (!problem.empty())
        site.fail(fmt::format("value %{} has type {} with {}", v, to_string(p.values[v]), problem));
    }
    std::vector<bool> defined(p.values.size(), false);
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      check_id(p, p.inputs[i], site, "input", i);
      define(defined, p.inputs[i], site, "input", i);
    }
    for (size_t i = 0; i < p.equations.size(); ++i) equation(p, i, defined, where);
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
      for (size_t k = eq.prim == Primitive::copy_done ? 1 : 0; k < eq.inputs.size(); ++k)
        if (start_of[static_cast<size_t>(eq.inputs[k])] >= 0)
          site.fail(fmt::format("operand {} (%{}) is the destination of a copy_start, which only its copy_done may read",
                                k, eq.inputs[k]));
      if (eq.prim == Primitive::copy_start) start_of[static_cast<size_t>(eq.outputs[0])] = static_cast<int64_t>(i);
      if (eq.prim != Primitive::copy_done) continue;
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
      if (p.equations[i].prim == Primitive::copy_start && waits[i] == 0)
        Site{where, static_cast<int64_t>(i), Primitive::copy_start, &p}.fail("no copy_done waits for this copy");
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

  void equation(const Program& p, size_t index, std::vector<bool>& defined, const std::string& where) {
    const Equation& eq = p.equations[index];
    if (static_cast<int>(eq.prim) >= kNumPrimitives)
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
      program(*sub, fmt::format("{}: subprogram {}: program '{}'", site.str(), s, sub->name));
    }

    std::vector<Type> expected;
    try {
      expected = prims::infer_types(eq.prim, eq.params, in, eq.subprograms);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::invalid_argument) throw;
      site.fail(e.message());
    }

    if (eq.outputs.size() != expected.size())
      site.fail(fmt::format("declares {} output(s) but {} produces {}", eq.outputs.size(), prims::name_of(eq.prim),
                            expected.size()));
    bool types_match = true;
    for (size_t i = 0; i < eq.outputs.size(); ++i) {
      ValueId v = eq.outputs[i];
      check_id(p, v, site, "output", i);
      define(defined, v, site, "output", i);
      types_match = types_match && p.type(v) == expected[i];
    }
    if (!types_match) {
      std::vector<Type> declared;
      for (ValueId v : eq.outputs) declared.push_back(p.type(v));
      site.fail(fmt::format("declared output types {} differ from the inferred types {}", type_list(declared),
                            type_list(expected)));
    }
  }

  std::unordered_map<const Program*, State> state_;
};

}  // namespace

void verify(const Program& p) { Verifier().program(p, fmt::format("program '{}'", p.name)); }

}  // namespace ferry::ir
