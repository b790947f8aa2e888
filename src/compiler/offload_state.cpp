#include "compiler/offload_state.h"

#include <algorithm>
#include <concepts>

#include "compiler/pass_util.h"

namespace ferry::compiler {

namespace {

constexpr size_t idx(std::integral auto i) { return static_cast<size_t>(i); }

// How many equations from `start` each value is (a path through the top level's equations), or
// kFar where none leads there.
constexpr size_t kFar = static_cast<size_t>(-1);
std::vector<size_t> distance_from(const ir::Program& p, ir::ValueId start) {
  std::vector<size_t> d(p.values.size(), kFar);
  d[idx(start)] = 0;
  for (const ir::Equation& eq : p.equations) {
    size_t nearest = kFar;
    for (ir::ValueId v : eq.inputs) nearest = std::min(nearest, d[idx(v)]);
    if (nearest == kFar) continue;
    for (ir::ValueId o : eq.outputs) d[idx(o)] = std::min(d[idx(o)], nearest + 1);
  }
  return d;
}

}  // namespace

std::vector<StateCandidate> state_candidates(const ir::Program& p, std::span<const char> donated) {
  std::vector<StateCandidate> out;
  std::vector<char> paired(p.outputs.size(), 0), is_input(p.values.size(), 0);
  for (ir::ValueId v : p.inputs) is_input[idx(v)] = 1;
  for (size_t i = 0; i < p.inputs.size() && i < donated.size(); ++i) {
    const ir::Type& t = p.type(p.inputs[i]);
    if (!donated[i] || t.kind != MemoryKind::device || t.size_bytes() == 0) continue;
    // Its new value: the nearest output of its type computed from it (AdamW's new moment is two
    // equations from the moment; the new parameters, computed from the moment too, are further).
    const std::vector<size_t> d = distance_from(p, p.inputs[i]);
    size_t best = p.outputs.size();
    for (size_t o = 0; o < p.outputs.size(); ++o) {
      const ir::ValueId w = p.outputs[o];
      if (paired[o] || is_input[idx(w)] || d[idx(w)] == kFar || !(p.type(w) == t)) continue;
      if (best == p.outputs.size() || d[idx(w)] < d[idx(p.outputs[best])]) best = o;
    }
    if (best == p.outputs.size()) continue;
    paired[best] = 1;
    out.push_back({i, best, t.size_bytes()});
  }
  // Read last first (optimizer moments, read by the update alone, before parameters the forward
  // pass reads at once), larger first among those read at once: the device holds a moved array from
  // its fetch on, so what moving one saves is its bytes over the part of the step before its first read.
  std::vector<size_t> first_read(p.values.size(), p.equations.size());
  for (size_t e = p.equations.size(); e-- > 0;)
    for (ir::ValueId v : p.equations[e].inputs) first_read[idx(v)] = e;
  for (StateCandidate& c : out) c.first_read = first_read[idx(p.inputs[c.input])];
  std::stable_sort(out.begin(), out.end(), [](const StateCandidate& a, const StateCandidate& b) {
    return a.first_read != b.first_read ? a.first_read > b.first_read : a.bytes > b.bytes;
  });
  return out;
}

void offload_state(ir::Program& p, std::span<const StateCandidate> state) {
  // Each fetch just before the first reader, each copy back just after the new value is made: the
  // device holds a moved array only between the two (the scheduler keeps them there, or moves
  // them where that lowers the peak).
  std::vector<std::vector<ir::Equation>> before(p.equations.size() + 1), after(p.equations.size() + 1);
  std::vector<size_t> producer(p.values.size(), p.equations.size());
  for (size_t e = 0; e < p.equations.size(); ++e)
    for (ir::ValueId o : p.equations[e].outputs) producer[idx(o)] = e;
  for (const StateCandidate& s : state) {
    const ir::ValueId in = p.inputs[s.input];
    const ir::Type device = p.type(in);
    p.values[idx(in)].kind = MemoryKind::pinned_host;
    const ir::ValueId fetched = p.add_value(device);
    for (ir::Equation& eq : p.equations) std::replace(eq.inputs.begin(), eq.inputs.end(), in, fetched);
    std::replace(p.outputs.begin(), p.outputs.end(), in, fetched);
    before[std::min(s.first_read, p.equations.size())].push_back(device_put(in, fetched, MemoryKind::device));
    const ir::ValueId made = p.outputs[s.output];
    ir::Type host = p.type(made);
    host.kind = MemoryKind::pinned_host;
    const ir::ValueId back = p.add_value(host);
    after[producer[idx(made)]].push_back(device_put(made, back, MemoryKind::pinned_host));
    p.outputs[s.output] = back;
  }
  std::vector<ir::Equation> equations;
  for (size_t e = 0; e <= p.equations.size(); ++e) {
    for (ir::Equation& f : before[e]) equations.push_back(std::move(f));
    if (e == p.equations.size()) break;
    equations.push_back(std::move(p.equations[e]));
    for (ir::Equation& b : after[e]) equations.push_back(std::move(b));
  }
  p.equations = std::move(equations);
}

}  // namespace ferry::compiler
