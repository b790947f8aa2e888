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

constexpr size_t idx(ValueId v) { return static_cast<size_t>(v); }

// The body's values that its outputs marked in `roots` are computed from (what dce would keep).
std::vector<char> reaching(const ir::Program& body, const std::vector<char>& roots) {
  std::vector<char> live(body.values.size(), 0);
  for (size_t k = 0; k < body.outputs.size(); ++k)
    if (roots[k]) live[idx(body.outputs[k])] = 1;
  for (size_t e = body.equations.size(); e-- > 0;) {
    const ir::Equation& eq = body.equations[e];
    bool any = false;
    for (ValueId v : eq.outputs) any = any || live[idx(v)];
    if (any)
      for (ValueId v : eq.inputs) live[idx(v)] = 1;
  }
  return live;
}

// Which of the body's outputs are needed: every stacked result (those left after pruning), the
// carries the program reads, and, to a fixed point, the carries a needed output is computed from
// (a carry feeds the next step). The rest are carries nobody reads that only feed themselves,
// such as the cotangent a backward scan accumulates for a loop constant nobody differentiates,
// which would keep alive whatever stacked residual computes it.
std::vector<char> needed_outputs(const ir::Equation& scan, const ir::Program& body, const std::vector<int>& uses) {
  const size_t nc = static_cast<size_t>(std::get<ir::ScanParams>(scan.params).num_carry);
  std::vector<char> needed(body.outputs.size(), 1);
  for (size_t j = 0; j < nc; ++j) needed[j] = uses[idx(scan.outputs[j])] > 0;
  for (bool grew = true; grew;) {
    grew = false;
    std::vector<char> live = reaching(body, needed);
    for (size_t j = 0; j < nc; ++j)
      if (!needed[j] && live[idx(body.inputs[j])]) needed[j] = 1, grew = true;
  }
  return needed;
}

template <typename T>
void erase_at(std::vector<T>& v, size_t k) {
  v.erase(v.begin() + static_cast<std::ptrdiff_t>(k));
}

// Removes the unused ys, the carries nobody needs and the unread operands of one scan; returns
// whether anything went.
bool prune(ir::Equation& scan, const std::vector<int>& uses) {
  auto& params = std::get<ir::ScanParams>(scan.params);
  auto body = std::make_shared<ir::Program>(*scan.subprograms.at(0));
  bool changed = false;
  for (size_t k = scan.outputs.size(); k-- > static_cast<size_t>(params.num_carry);) {
    if (uses[idx(scan.outputs[k])] > 0) continue;
    erase_at(scan.outputs, k);
    erase_at(body->outputs, k);
    changed = true;
  }
  std::vector<char> needed = needed_outputs(scan, *body, uses);
  std::vector<size_t> dead_carries;
  for (size_t j = static_cast<size_t>(params.num_carry); j-- > 0;)
    if (!needed[j]) dead_carries.push_back(j);  // descending
  for (size_t j : dead_carries) {
    erase_at(scan.outputs, j);
    erase_at(body->outputs, j);
  }
  if (changed || !dead_carries.empty()) eliminate_dead_code(*body);
  for (size_t j : dead_carries) {  // no equation reads them now
    erase_at(scan.inputs, j);
    erase_at(body->inputs, j);
  }
  params.num_carry -= static_cast<int64_t>(dead_carries.size());
  changed = changed || !dead_carries.empty();
  const size_t nc = static_cast<size_t>(params.num_carry);
  std::vector<int> body_uses = use_counts(*body);
  for (size_t j = scan.inputs.size(); j-- > nc;) {
    if (body_uses[idx(body->inputs[j])] > 0) continue;
    erase_at(scan.inputs, j);
    erase_at(body->inputs, j);
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
    // Scans inside bodies (a backward scan nested in another's body stacks cotangents nobody
    // reads just as a top-level one does); a body pruned may stop reading an operand, which the
    // next round removes.
    for (ir::Equation& eq : p.equations)
      for (auto& body : eq.subprograms) {
        auto copy = std::make_shared<ir::Program>(*body);
        if (!prune_scans(*copy)) continue;
        body = copy;
        changed = true;
      }
    if (changed) eliminate_dead_code(p);
    any = any || changed;
  }
  return any;
}

}  // namespace ferry::compiler
