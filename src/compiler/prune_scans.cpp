#include "compiler/prune_scans.h"

#include <memory>
#include <vector>

#include "ir/dce.h"

namespace ferry::compiler {
namespace {

using ir::ValueId;

std::vector<int> use_counts(const ir::Program& p) {
  std::vector<int> uses(p.values.size(), 0);
  for (const ir::Equation& eq : p.equations)
    for (ValueId v : eq.inputs) ++uses[static_cast<size_t>(v)];
  for (ValueId v : p.outputs) ++uses[static_cast<size_t>(v)];
  return uses;
}

// Removes the unused ys and unread operands of one scan; returns whether anything went.
bool prune(ir::Equation& scan, const std::vector<int>& uses) {
  auto& params = std::get<ir::ScanParams>(scan.params);
  const size_t nc = static_cast<size_t>(params.num_carry);
  auto body = std::make_shared<ir::Program>(*scan.subprograms.at(0));
  bool changed = false;
  for (size_t k = scan.outputs.size(); k-- > nc;) {
    if (uses[static_cast<size_t>(scan.outputs[k])] > 0) continue;
    scan.outputs.erase(scan.outputs.begin() + static_cast<std::ptrdiff_t>(k));
    body->outputs.erase(body->outputs.begin() + static_cast<std::ptrdiff_t>(k));
    changed = true;
  }
  if (changed) eliminate_dead_code(*body);
  std::vector<int> body_uses = use_counts(*body);
  for (size_t j = scan.inputs.size(); j-- > nc;) {
    if (body_uses[static_cast<size_t>(body->inputs[j])] > 0) continue;
    scan.inputs.erase(scan.inputs.begin() + static_cast<std::ptrdiff_t>(j));
    body->inputs.erase(body->inputs.begin() + static_cast<std::ptrdiff_t>(j));
    if (j < nc + static_cast<size_t>(params.num_xs)) params.num_xs -= 1;
    changed = true;
  }
  if (changed) scan.subprograms[0] = body;
  return changed;
}

}  // namespace

bool prune_scans(ir::Program& p) {
  bool any = false;
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<int> uses = use_counts(p);
    for (ir::Equation& eq : p.equations)
      if (eq.prim == Primitive::scan) changed = prune(eq, uses) || changed;
    if (changed) eliminate_dead_code(p);
    any = any || changed;
  }
  return any;
}

}  // namespace ferry::compiler
