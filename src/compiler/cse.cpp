#include "compiler/cse.h"

#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "ir/params_text.h"

namespace ferry::compiler {
namespace {

// Identifies what an equation computes: primitive, parameters, (renamed) inputs and bodies.
std::string key_of(const ir::Equation& eq) {
  std::string key = fmt::format("{}{}(", static_cast<int>(eq.prim), ir::params_to_string(eq.params));
  for (ir::ValueId v : eq.inputs) key += fmt::format("{},", v);
  key += ")";
  for (const auto& body : eq.subprograms) key += fmt::format("@{}", static_cast<const void*>(body.get()));
  // Names and checkpoint decisions change what policies see, so they are part of the identity.
  key += fmt::format("|{}|{}{}{}", eq.name, static_cast<int>(eq.decision.kind), static_cast<int>(eq.decision.src),
                     static_cast<int>(eq.decision.dst));
  return key;
}

}  // namespace

namespace {

bool eliminate(ir::Program& program, bool merge_automatic) {
  bool changed = false;
  std::vector<ir::ValueId> rename(program.values.size());
  for (size_t v = 0; v < rename.size(); ++v) rename[v] = static_cast<ir::ValueId>(v);
  std::unordered_map<std::string, size_t> seen;  // key -> index in `kept`
  std::unordered_map<std::string, size_t> seen_recomputed;  // the same, for recomputations
  std::vector<ir::Equation> kept;
  kept.reserve(program.equations.size());
  for (ir::Equation& eq : program.equations) {
    for (ir::ValueId& v : eq.inputs) v = rename[static_cast<size_t>(v)];
    for (auto& body : eq.subprograms) {
      auto copy = std::make_shared<ir::Program>(*body);
      if (eliminate(*copy, merge_automatic)) {
        body = copy;
        changed = true;
      }
    }
    if (eq.rematerialized) {
      // A recomputation stays apart from its forward twin. With merge_automatic, one that automatic
      // left to the planner reads an earlier recomputation of the same value instead (see cse.h).
      auto [it, inserted] = seen_recomputed.emplace(key_of(eq), kept.size());
      if (merge_automatic && !inserted && eq.automatic) {
        const ir::Equation& twin = kept[it->second];
        for (size_t i = 0; i < eq.outputs.size(); ++i) rename[static_cast<size_t>(eq.outputs[i])] = twin.outputs[i];
        changed = true;
        continue;
      }
      kept.push_back(std::move(eq));
      continue;
    }
    auto [it, inserted] = seen.emplace(key_of(eq), kept.size());
    if (!inserted) {
      const ir::Equation& twin = kept[it->second];
      for (size_t i = 0; i < eq.outputs.size(); ++i) rename[static_cast<size_t>(eq.outputs[i])] = twin.outputs[i];
      changed = true;
      continue;
    }
    kept.push_back(std::move(eq));
  }
  for (ir::ValueId& v : program.outputs) v = rename[static_cast<size_t>(v)];
  program.equations = std::move(kept);
  return changed;
}

}  // namespace

bool eliminate_common_subexpressions(ir::Program& program) { return eliminate(program, false); }

bool eliminate_common_subexpressions_merging_automatic(ir::Program& program) { return eliminate(program, true); }

}  // namespace ferry::compiler
