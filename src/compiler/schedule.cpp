#include "compiler/schedule.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <set>
#include <tuple>
#include <vector>

#include "compiler/pass_util.h"

namespace ferry::compiler {

bool schedule_for_memory(ir::Program& program) {
  bool changed = run_on_bodies(program, schedule_for_memory);
  const size_t n = program.equations.size(), nv = program.values.size();
  std::vector<int> producer(nv, -1);
  for (size_t e = 0; e < n; ++e)
    for (ir::ValueId v : program.equations[e].outputs) producer[static_cast<size_t>(v)] = static_cast<int>(e);
  // Readers of each value (each equation once), and how many producers each equation waits for.
  std::vector<std::vector<int>> readers(nv);
  std::vector<int> waiting(n, 0);
  for (size_t e = 0; e < n; ++e) {
    std::vector<ir::ValueId> ins = program.equations[e].inputs;
    std::sort(ins.begin(), ins.end());
    ins.erase(std::unique(ins.begin(), ins.end()), ins.end());
    for (ir::ValueId v : ins) {
      readers[static_cast<size_t>(v)].push_back(static_cast<int>(e));
      if (producer[static_cast<size_t>(v)] >= 0) ++waiting[e];
    }
  }
  std::vector<int> unread(nv);
  std::vector<char> pinned(nv, 0);  // inputs and outputs stay live regardless of the order
  for (size_t v = 0; v < nv; ++v) unread[v] = static_cast<int>(readers[v].size());
  for (ir::ValueId v : program.inputs) pinned[static_cast<size_t>(v)] = 1;
  for (ir::ValueId v : program.outputs) pinned[static_cast<size_t>(v)] = 1;
  auto device_bytes = [&](ir::ValueId v) {
    const ir::Type& t = program.type(v);
    return t.kind == MemoryKind::device ? t.size_bytes() : 0;
  };
  auto score = [&](size_t e) {
    const ir::Equation& eq = program.equations[e];
    int64_t s = 0;
    for (ir::ValueId v : eq.outputs) s += device_bytes(v);
    std::vector<ir::ValueId> ins = eq.inputs;
    std::sort(ins.begin(), ins.end());
    ins.erase(std::unique(ins.begin(), ins.end()), ins.end());
    for (ir::ValueId v : ins)
      if (!pinned[static_cast<size_t>(v)] && unread[static_cast<size_t>(v)] == 1) s -= device_bytes(v);
    return s;
  };
  // Where each equation's results are first read in program order: among equal scores, work whose
  // results are needed soonest goes first (a value for the backward pass waits for it).
  std::vector<size_t> first_need(n, n);
  for (size_t e = 0; e < n; ++e)
    for (ir::ValueId v : program.equations[e].outputs)
      for (int r : readers[static_cast<size_t>(v)]) first_need[e] = std::min(first_need[e], static_cast<size_t>(r));
  // Ready equations ordered by: rematerialized last; then those that free device memory (most
  // first); then those that add some, in the order their results are needed. A score changes only
  // when one of the equation's inputs gets down to its last reader, so keys are updated then.
  using Key = std::tuple<bool, bool, int64_t, size_t>;
  std::set<Key> ready;
  std::vector<Key> key_of(n);
  std::vector<char> is_ready(n, 0);
  auto make_ready = [&](size_t e) {
    int64_t s = score(e);
    key_of[e] = Key{program.equations[e].rematerialized, s > 0, s > 0 ? static_cast<int64_t>(first_need[e]) : s, e};
    ready.insert(key_of[e]);
    is_ready[e] = 1;
  };
  for (size_t e = 0; e < n; ++e)
    if (waiting[e] == 0) make_ready(e);
  std::vector<size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    size_t best = std::get<3>(*ready.begin());
    ready.erase(ready.begin());
    is_ready[best] = 0;
    order.push_back(best);
    const ir::Equation& eq = program.equations[best];
    std::vector<ir::ValueId> ins = eq.inputs;
    std::sort(ins.begin(), ins.end());
    ins.erase(std::unique(ins.begin(), ins.end()), ins.end());
    for (ir::ValueId v : ins) {
      if (--unread[static_cast<size_t>(v)] != 1) continue;
      for (int r : readers[static_cast<size_t>(v)]) {  // the one reader left may now free v
        size_t re = static_cast<size_t>(r);
        if (!is_ready[re]) continue;
        ready.erase(key_of[re]);
        make_ready(re);
      }
    }
    for (ir::ValueId v : eq.outputs)
      for (int r : readers[static_cast<size_t>(v)])
        if (--waiting[static_cast<size_t>(r)] == 0) make_ready(static_cast<size_t>(r));
  }
  return reorder(program, order) || changed;
}

}  // namespace ferry::compiler
