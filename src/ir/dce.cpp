#include "ir/dce.h"

#include <vector>

namespace ferry::ir {

bool eliminate_dead_code(Program& program) {
  bool changed = false;
  std::vector<bool> live(program.values.size(), false);
  for (ValueId v : program.outputs) live[static_cast<size_t>(v)] = true;
  std::vector<bool> keep(program.equations.size(), false);
  for (size_t e = program.equations.size(); e-- > 0;) {
    const Equation& eq = program.equations[e];
    for (ValueId v : eq.outputs) keep[e] = keep[e] || live[static_cast<size_t>(v)];
    if (!keep[e]) continue;
    for (ValueId v : eq.inputs) live[static_cast<size_t>(v)] = true;
  }
  std::vector<Equation> kept;
  kept.reserve(program.equations.size());
  for (size_t e = 0; e < program.equations.size(); ++e) {
    if (!keep[e]) {
      changed = true;
      continue;
    }
    Equation& eq = program.equations[e];
    for (auto& body : eq.subprograms) {
      auto copy = std::make_shared<Program>(*body);
      if (eliminate_dead_code(*copy)) {
        body = copy;
        changed = true;
      }
    }
    kept.push_back(std::move(eq));
  }
  program.equations = std::move(kept);
  return changed;
}

}  // namespace ferry::ir
