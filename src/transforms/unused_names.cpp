#include "transforms/unused_names.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "transforms/partition.h"

namespace ferry::transforms {

std::vector<NamedDecision> named_decisions(const ir::Program& joint, const Partition& part, const std::string& policy) {
  std::set<ir::ValueId> residual;
  for (const PartitionResidual& r : part.residuals) residual.insert(r.value);
  std::vector<NamedDecision> out;
  for (const ir::Equation& eq : joint.equations) {
    using Kind = ir::RematDecision::Kind;
    if (eq.prim != Primitive::checkpoint_name || eq.name.empty()) continue;
    if (!eq.decision.by_name || (eq.decision.kind != Kind::save && eq.decision.kind != Kind::offload)) continue;
    ir::ValueId v = eq.outputs.at(0);
    out.push_back({eq.name, policy, eq.decision, joint.type(v), residual.count(v) > 0});
  }
  return out;
}

std::vector<NamedDecision> unneeded_names(const std::vector<NamedDecision>& records) {
  std::set<std::string> needed;
  for (const NamedDecision& d : records)
    if (d.needed) needed.insert(d.name);
  std::vector<NamedDecision> out;
  for (const NamedDecision& d : records) {
    if (needed.count(d.name) > 0) continue;
    if (std::none_of(out.begin(), out.end(), [&](const NamedDecision& o) { return o.name == d.name; })) out.push_back(d);
  }
  return out;
}

std::string unneeded_description(const NamedDecision& d) {
  return fmt::format("named '{}': not needed by the backward pass", d.name);
}

std::string unneeded_warning(const NamedDecision& d) {
  std::string what = d.decision.kind == ir::RematDecision::Kind::offload
                         ? fmt::format("offloads it to {}", memory_kind_name(d.decision.dst))
                         : std::string("saves it");
  return fmt::format("{}; policy '{}' {}, which has no effect (nothing is kept for that name)", unneeded_description(d),
                     d.policy, what);
}

}  // namespace ferry::transforms
