#include "compiler/memory_plan.h"

#include "compiler/pack_buffers.h"
#include "prims/fused_body.h"
#include "prims/registry.h"

#include <algorithm>
#include <concepts>
#include <limits>

namespace ferry::compiler {
namespace {

constexpr size_t idx(std::integral auto i) { return static_cast<size_t>(i); }

int64_t aligned(int64_t bytes) { return (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment; }

}  // namespace

std::vector<size_t> in_place_candidates(const ir::Equation& eq) {
  if (eq.prim == ir::op::fused) return prims::fused_in_place_inputs(*eq.subprograms.at(0));  // per body
  std::vector<size_t> inputs;
  const int32_t bits = prims::info(eq.prim).in_place;
  for (size_t i = 0; i < eq.inputs.size() && i < 31; ++i)
    if (bits > 0 && (bits >> i) & 1) inputs.push_back(i);
  return inputs;
}

namespace {

// Packs every buffer of one kind into its arena (pack_buffers.h). Best fit depends on the order
// buffers are placed in, and no one order wins on every program: largest first suits buffers of
// mixed sizes, first born first suits the stack-like lifetimes of a forward and backward pass.
// Both are tried and the smaller arena is kept; largest first only while the pairs of buffers live
// at once are few enough to look at (kMaxOverlapPairs: a 100,000-op chain's gradient without fusion
// has billions), so that planning stays near-linear in the program.
int64_t pack(std::vector<Buffer>& buffers, MemoryKind kind) {
  std::vector<size_t> by_size;
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].kind == kind && buffers[i].output_of < 0) by_size.push_back(i);
  std::vector<size_t> by_start = by_size;
  std::stable_sort(by_size.begin(), by_size.end(), [&](size_t a, size_t b) {
    if (buffers[a].size != buffers[b].size) return buffers[a].size > buffers[b].size;
    return buffers[a].start < buffers[b].start;
  });
  std::stable_sort(by_start.begin(), by_start.end(), [&](size_t a, size_t b) {
    if (buffers[a].start != buffers[b].start) return buffers[a].start < buffers[b].start;
    return buffers[a].size > buffers[b].size;
  });
  std::vector<PackItem> items(buffers.size());
  for (size_t i : by_start) items[i] = {buffers[i].size, buffers[i].start, buffers[i].end, 0};
  int64_t arena = std::numeric_limits<int64_t>::max();
  std::vector<PackItem> largest_first;
  if (overlapping_pairs(items, by_size) <= kMaxOverlapPairs) {
    largest_first = items;
    arena = pack_in_any_order(largest_first, by_size);
  }
  const int64_t other = pack_by_start(items, by_start);
  const std::vector<PackItem>& chosen = other < arena ? items : largest_first;
  for (size_t i : by_start) buffers[i].offset = chosen[i].offset;
  return std::min(arena, other);
}

}  // namespace

std::shared_ptr<const MemoryPlan> plan_region(const ir::Program& region, const ir::Equation* parent,
                                              const PlanOptions& options) {
  if (parent == nullptr) return plan_memory(region, /*outputs_external=*/false, options);
  ir::Equation self = *parent;
  self.subprograms.at(0) = std::shared_ptr<const ir::Program>(std::shared_ptr<void>(), &region);  // not owned
  return plan_body(self, PlanOptions{options.workspace, {}});
}

Streams find_streams(const ir::Program& body, int num_carry, int num_xs) {
  Streams s;
  const size_t nv = body.values.size();
  std::vector<int> readers(nv, 0), producer(nv, -1), output_uses(nv, 0);
  std::vector<char> is_input(nv, 0), is_output(nv, 0);
  for (ir::ValueId v : body.inputs) is_input[idx(v)] = 1;
  for (ir::ValueId v : body.outputs) {
    is_output[idx(v)] = 1;
    ++output_uses[idx(v)];
  }
  for (size_t e = 0; e < body.equations.size(); ++e) {
    for (ir::ValueId v : body.equations[e].inputs) ++readers[idx(v)];
    for (ir::ValueId v : body.equations[e].outputs) producer[idx(v)] = static_cast<int>(e);
  }
  for (const ir::Equation& done : body.equations) {
    if (done.prim != ir::op::copy_done) continue;
    const ir::Equation& start = body.equations[idx(producer[idx(done.inputs[0])])];
    ir::ValueId src = start.inputs[0], result = done.outputs[0];
    if (readers[idx(done.inputs[0])] != 1) continue;
    // Prefetch: an xs slice in host memory, read by nothing but this copy to the device.
    for (int i = num_carry; i < num_carry + num_xs; ++i)
      if (body.inputs[idx(i)] == src && readers[idx(src)] == 2 &&
          body.type(result).kind == MemoryKind::device && !is_output[idx(result)])
        s.prefetched.emplace_back(result, i);
    // Postpone: a ys output in host memory filled from a device value computed in the body. The
    // copy then never runs inside the body, so its host result must have no other use there: no
    // reader (a fetch back, say) and no second output position, which would read a value that
    // was never written.
    if (readers[idx(result)] != 0 || output_uses[idx(result)] != 1) continue;
    for (size_t o = idx(num_carry); o < body.outputs.size(); ++o)
      if (body.outputs[o] == result && body.type(src).kind == MemoryKind::device && !is_input[idx(src)] &&
          !is_output[idx(src)] && producer[idx(src)] >= 0 &&
          std::none_of(s.postponed.begin(), s.postponed.end(), [&](const auto& q) { return q.first == src; }))
        s.postponed.emplace_back(src, static_cast<int>(o));
  }
  return s;
}

namespace {
std::shared_ptr<const MemoryPlan> plan_program(const ir::Program& p, bool outputs_external, const Streams* streams,
                                               const PlanOptions& options);

// The donated input (not `taken`) whose buffer output o can be written into when the output's
// allocation is first written at position w (its equation, the start of a copy or collective, or the start
// of an in-place chain it takes over), or -1. Every read of the argument (`last` read per value)
// must come before w, or be the equation at w writing over it in place.
int donated_input_for(const ir::Program& p, size_t o, int w, const std::vector<char>& donated,
                      const std::vector<char>& taken, const std::vector<int>& last) {
  ir::ValueId v = p.outputs[o];
  if (w < 0 || p.type(v).size_bytes() == 0) return -1;
  const ir::Equation& eq = p.equations[idx(w)];
  for (size_t i = 0; i < p.inputs.size() && i < donated.size(); ++i) {
    ir::ValueId u = p.inputs[i];
    if (!donated[i] || taken[i] || !(p.type(u) == p.type(v))) continue;
    int read = last[idx(u)];
    bool in_place = false;
    if (read == w && !ir::has(eq.prim, ir::kAsyncStart))
      for (size_t c : in_place_candidates(eq)) in_place = in_place || eq.inputs[c] == u;
    if (read < w || in_place) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

std::shared_ptr<const MemoryPlan> plan_memory(const ir::Program& p, bool outputs_external, const PlanOptions& options) {
  return plan_program(p, outputs_external, nullptr, options);
}

std::shared_ptr<const MemoryPlan> plan_body(const ir::Equation& eq, const PlanOptions& options) {
  const ir::Program& sub = *eq.subprograms.at(0);
  Streams found;
  if (eq.prim == Primitive::scan) {
    const auto& sp = std::get<ir::ScanParams>(eq.params);
    found = find_streams(sub, static_cast<int>(sp.num_carry), static_cast<int>(sp.num_xs));
  }
  return plan_program(sub, /*outputs_external=*/true, &found, options);
}

namespace {

// The room in one output's allocation for temporaries (place_temporaries_in_outputs): positions
// lo..hi, before anything is written to it, and the buffers its first write may write it over.
struct Room {
  int output = -1, lo = 0, hi = -1;
  MemoryKind kind = MemoryKind::device;
  int64_t size = 0;
  std::vector<size_t> placed;  // buffers placed in it
  std::vector<int> in_place;   // buffers the writing equation may write the output over
};

// The offset of the smallest gap in room r that holds buffer b beside the buffers placed there
// that live at the same time (only at the allocation's start if `at_start`), or -1.
int64_t smallest_gap(const Room& r, const std::vector<Buffer>& buffers, const Buffer& b, bool at_start) {
  std::vector<std::pair<int64_t, int64_t>> busy;
  for (size_t q : r.placed) {
    const Buffer& o = buffers[q];
    if (o.start <= b.end && b.start <= o.end) busy.emplace_back(o.offset, o.offset + o.size);
  }
  std::sort(busy.begin(), busy.end());
  busy.emplace_back(r.size, r.size);  // the allocation's end
  int64_t best = -1, best_gap = std::numeric_limits<int64_t>::max(), frontier = 0;
  for (auto [lo, hi] : busy) {
    if (lo - frontier >= b.size && lo - frontier < best_gap && (!at_start || frontier == 0)) {
      best = frontier;
      best_gap = lo - frontier;
    }
    frontier = std::max(frontier, hi);
  }
  return best;
}

// Plans one program, in the steps below (each a member, in the order run() runs them).
class BufferAssigner {
 public:
  BufferAssigner(const ir::Program& p, bool outputs_external, const PlanOptions& options)
      : p_(p), outputs_external_(outputs_external), options_(options), plan_(std::make_shared<MemoryPlan>()),
        n_(static_cast<int>(p.equations.size())), nv_(p.values.size()) {}

  std::shared_ptr<const MemoryPlan> run(const Streams* streams) {
    place_inputs_and_outputs();
    if (streams != nullptr) leave_streams_to_the_runner(*streams);
    copy_into_external_outputs();
    for (int e = 0; e < n_; ++e) {
      if (plan_->skip[idx(e)]) continue;  // the scan runner's copy
      assign_buffers(e);
      const ir::Equation& eq = p_.equations[idx(e)];
      if (eq.prim == Primitive::scan || eq.prim == Primitive::checkpoint || eq.prim == Primitive::while_loop)
        plan_nested_body(e);
    }
    if (!outputs_external_) give_outputs_their_chains_and_donations();
    pack_arenas();
    find_peaks();
    return plan_;
  }

 private:
  // Arguments (or the enclosing equation's values) and outputs: where they live, and the last
  // reader of every value.
  void place_inputs_and_outputs() {
    MemoryPlan& plan = *plan_;
    plan.slots.resize(nv_);
    plan.bodies.resize(idx(n_));
    plan.acquire_before.resize(idx(n_));
    plan.release_after.resize(idx(n_));
    plan.skip.assign(idx(n_), 0);
    plan.workspace.assign(idx(n_), -1);
    plan.output_alias.assign(p_.outputs.size(), -1);
    last_.assign(nv_, -1);
    for (size_t i = 0; i < p_.inputs.size(); ++i) {
      Slot& s = plan.slots[idx(p_.inputs[i])];
      s.where = outputs_external_ ? Slot::Where::external_input : Slot::Where::argument;
      s.kind = p_.type(p_.inputs[i]).kind;
      s.index = static_cast<int>(i);
    }
    for (int e = 0; e < n_; ++e)
      for (ir::ValueId v : p_.equations[idx(e)].inputs) last_[idx(v)] = e;
    // Outputs live outside the arena: in the enclosing equation's values, or at the top level in
    // allocations of their own that the returned Arrays keep (or a donated argument's buffer). An
    // output that is an input or another output keeps that slot: such a program can be planned (for
    // analyses) but not run, and compiling gives each output a value of its own first
    // (materialize_outputs; the executable checks).
    for (size_t i = 0; i < p_.outputs.size(); ++i) {
      ir::ValueId v = p_.outputs[i];
      Slot& s = plan.slots[idx(v)];
      if (s.where != Slot::Where::arena || s.index >= 0) continue;
      s.where = Slot::Where::external_output;
      s.kind = p_.type(v).kind;
      s.index = static_cast<int>(i);
    }
  }

  // Streamed slices: the scan runner does these copies; the body sees extra external values.
  void leave_streams_to_the_runner(const Streams& streams) {
    MemoryPlan& plan = *plan_;
    std::vector<int> producer(nv_, -1);
    for (int e = 0; e < n_; ++e)
      for (ir::ValueId v : p_.equations[idx(e)].outputs) producer[idx(v)] = e;
    auto skip_copy = [&](int done) {
      plan.skip[idx(done)] = 1;
      plan.skip[idx(producer[idx(p_.equations[idx(done)].inputs[0])])] = 1;
    };
    int extra_in = static_cast<int>(p_.inputs.size()), extra_out = static_cast<int>(p_.outputs.size());
    for (auto [value, input] : streams.prefetched) {
      Slot& s = plan.slots[idx(value)];
      s = Slot{Slot::Where::external_input, p_.type(value).kind, -1, extra_in++};
      skip_copy(producer[idx(value)]);
      (void)input;
    }
    for (auto [value, output] : streams.postponed) {
      plan.slots[idx(value)] = Slot{Slot::Where::external_output, p_.type(value).kind, -1, extra_out++};
      skip_copy(producer[idx(p_.outputs[idx(output)])]);
    }
    for (int e = 0; e < n_; ++e)
      if (plan.skip[idx(e)])
        for (ir::ValueId v : p_.equations[idx(e)].outputs) {
          Slot& s = plan.slots[idx(v)];
          if (s.where == Slot::Where::arena) s = Slot{Slot::Where::external_input, p_.type(v).kind, -1, -1};
        }
  }

  // A copy whose result is an external output fills that destination directly.
  void copy_into_external_outputs() {
    for (const ir::Equation& eq : p_.equations)
      if (ir::has(eq.prim, ir::kAsyncDone)) {
        const Slot& out = plan_->slots[idx(eq.outputs[0])];
        if (out.where == Slot::Where::external_output) plan_->slots[idx(eq.inputs[0])] = out;
      }
  }

  int new_buffer(MemoryKind kind, int64_t bytes, int start, int end) {
    Buffer b;
    b.kind = kind;
    b.size = aligned(bytes);
    b.start = start;
    b.end = end;
    plan_->buffers.push_back(b);
    return static_cast<int>(plan_->buffers.size() - 1);
  }

  // Equation e's workspace, and a buffer for each of its results: its own, or (in place) the one
  // of an input that dies at e.
  void assign_buffers(int e) {
    MemoryPlan& plan = *plan_;
    const ir::Equation& eq = p_.equations[idx(e)];
    std::vector<size_t> candidates = in_place_candidates(eq);
    if (options_.workspace && (eq.subprograms.empty() || eq.prim == ir::op::fused))  // fused: a kernel
      if (int64_t bytes = options_.workspace(p_, eq); bytes > 0) {
        int b = new_buffer(MemoryKind::device, bytes, e, e);
        plan.buffers[idx(b)].workspace_of = e;
        plan.workspace[idx(e)] = b;
      }
    for (ir::ValueId v : eq.outputs) {
      Slot& s = plan.slots[idx(v)];
      s.kind = p_.type(v).kind;
      if (s.where == Slot::Where::external_output || s.where == Slot::Where::external_input) continue;
      int end = std::max(last_[idx(v)], e);
      int shared = -1;
      for (size_t c : candidates) {
        ir::ValueId u = eq.inputs[c];
        const Slot& su = plan.slots[idx(u)];
        if (su.where != Slot::Where::arena || su.buffer < 0 || last_[idx(u)] != e) continue;
        const ir::Type &tu = p_.type(u), &tv = p_.type(v);
        Buffer& b = plan.buffers[idx(su.buffer)];
        if (tu.kind != tv.kind || tu.size_bytes() != tv.size_bytes() || b.end != e || b.body_of >= 0) continue;
        shared = su.buffer;
        break;
      }
      if (shared >= 0) {
        plan.buffers[idx(shared)].end = end;
      } else {
        shared = new_buffer(s.kind, p_.type(v).size_bytes(), e, end);
      }
      plan.buffers[idx(shared)].values.push_back(v);
      s.where = Slot::Where::arena;
      s.buffer = shared;
    }
  }

  // A scan, checkpoint or while loop at e: its body's own plan, and the buffers the body needs from
  // this arena while it runs (its region per kind, the streamed slices' double buffers, the carry
  // scratch).
  void plan_nested_body(int e) {
    MemoryPlan& plan = *plan_;
    const ir::Equation& eq = p_.equations[idx(e)];
    BodyPlan body;
    const ir::Program& sub = *eq.subprograms.at(0);
    Streams found;
    if (eq.prim == Primitive::scan) {
      const auto& sp = std::get<ir::ScanParams>(eq.params);
      found = find_streams(sub, static_cast<int>(sp.num_carry), static_cast<int>(sp.num_xs));
    }
    body.plan = plan_body(eq, PlanOptions{options_.workspace, {}});
    // Each streamed slice: the io it replaces, the extra external index, two device buffers.
    auto stream = [&](const std::vector<std::pair<ir::ValueId, int>>& found_slices, int next_external,
                      std::vector<StreamedSlice>& out) {
      for (auto [value, io] : found_slices) {
        StreamedSlice s{io, next_external++, {}};
        for (int& b : s.buffers) {
          b = new_buffer(MemoryKind::device, sub.type(value).size_bytes(), e, e);
          plan.buffers[idx(b)].stream_of = e;
        }
        out.push_back(s);
      }
    };
    stream(found.prefetched, static_cast<int>(sub.inputs.size()), body.prefetched);
    stream(found.postponed, static_cast<int>(sub.outputs.size()), body.postponed);
    for (int k = 0; k < kNumMemoryKinds; ++k)
      if (body.plan->arena_size[idx(k)] > 0) {
        body.region[idx(k)] =
            new_buffer(static_cast<MemoryKind>(k), body.plan->arena_size[idx(k)], e, e);
        plan.buffers[idx(body.region[idx(k)])].body_of = e;
      }
    if (eq.prim == Primitive::scan || eq.prim == Primitive::while_loop) {
      // A while loop carries everything its body returns (the predicate first), as a scan its carries.
      const int64_t num_carry = eq.prim == Primitive::scan ? std::get<ir::ScanParams>(eq.params).num_carry
                                                           : static_cast<int64_t>(sub.outputs.size());
      for (int64_t c = 0; c < num_carry; ++c) {
        const ir::Type& t = p_.type(eq.outputs[idx(c)]);
        int b = new_buffer(t.kind, t.size_bytes(), e, e);
        plan.buffers[idx(b)].scratch_of = e;
        body.carry_scratch.push_back(b);
      }
    }
    plan.bodies[idx(e)] = std::move(body);
  }

  // Top level: an output written in place over a temporary that dies there takes that temporary's
  // buffer with it, so the whole in-place chain lives in the output's allocation (held for the
  // whole call anyway) and the result costs no buffer of its own in the arena: grad(sum(tanh(x)))
  // computes tanh, t * t and 1 - t * t in the output. Only chains that are the same in every order
  // of the program move (each value read by one equation, each equation with one input it could
  // write over), so the schedule's memory model (optimal_schedule.h) can read where values live
  // from any order's plan. Then donated arguments are matched to outputs, each output first
  // written where its chain starts.
  void give_outputs_their_chains_and_donations() {
    MemoryPlan& plan = *plan_;
    const ir::Program& p = p_;
    std::vector<int> producer(nv_, -1), readers(nv_, 0);
    std::vector<char> is_output(nv_, 0);
    for (int e = 0; e < n_; ++e) {
      const ir::Equation& eq = p.equations[idx(e)];
      for (ir::ValueId v : eq.outputs) producer[idx(v)] = e;
      for (size_t k = 0; k < eq.inputs.size(); ++k)
        if (std::find(eq.inputs.begin(), eq.inputs.begin() + static_cast<std::ptrdiff_t>(k), eq.inputs[k]) ==
            eq.inputs.begin() + static_cast<std::ptrdiff_t>(k))
          ++readers[idx(eq.inputs[k])];
    }
    for (ir::ValueId v : p.outputs) is_output[idx(v)] = 1;
    // The distinct arena inputs of `eq` it could write its result of type `out` over.
    auto writable_inputs = [&](const ir::Equation& eq, const ir::Type& out) {
      std::vector<ir::ValueId> found;
      for (size_t c : in_place_candidates(eq)) {
        ir::ValueId x = eq.inputs[c];
        const Slot& sx = plan.slots[idx(x)];
        if (sx.where == Slot::Where::arena && sx.buffer >= 0 && p.type(x).kind == out.kind &&
            p.type(x).size_bytes() == out.size_bytes() && std::find(found.begin(), found.end(), x) == found.end())
          found.push_back(x);
      }
      return found;
    };
    auto same_in_every_order = [&](const Buffer& b, const ir::Equation& last, const ir::Type& out) {
      if (writable_inputs(last, out).size() != 1) return false;
      for (ir::ValueId w : b.values) {
        const auto wi = idx(w);
        if (readers[wi] != 1 || is_output[wi] || producer[wi] < 0) return false;
        size_t writable = writable_inputs(p.equations[idx(producer[wi])], p.type(w)).size();
        if (writable != (w == b.values.front() ? 0u : 1u)) return false;
      }
      return true;
    };
    std::vector<char> taken(p.inputs.size(), 0);
    for (size_t i = 0; i < p.outputs.size(); ++i) {
      ir::ValueId v = p.outputs[i];
      int e = producer[idx(v)];
      if (e < 0 || plan.slots[idx(v)].index != static_cast<int>(i)) continue;
      const ir::Equation& eq = p.equations[idx(e)];
      const int written = ir::has(eq.prim, ir::kAsyncDone) ? producer[idx(eq.inputs[0])] : e;
      // The in-place chain the output can take over, if any.
      Buffer* chain = nullptr;
      for (size_t c : eq.outputs.size() == 1 ? in_place_candidates(eq) : std::vector<size_t>{}) {
        ir::ValueId u = eq.inputs[c];
        const Slot& su = plan.slots[idx(u)];
        if (su.where != Slot::Where::arena || su.buffer < 0 || last_[idx(u)] != e) continue;
        Buffer& b = plan.buffers[idx(su.buffer)];
        const ir::Type &tu = p.type(u), &tv = p.type(v);
        if (tu.kind != tv.kind || tu.size_bytes() != tv.size_bytes() || b.end != e || b.body_of >= 0 ||
            b.scratch_of >= 0 || b.stream_of >= 0 || b.workspace_of >= 0 || b.output_of >= 0 ||
            !same_in_every_order(b, eq, tv))
          continue;
        chain = &b;
        break;
      }
      // Both when the argument is dead before the chain starts. Else whichever saves more: the
      // output's bytes (written into the argument) or the chain's buffer (moved out of the arena);
      // on a tie the donation the caller asked for.
      int alias = chain ? donated_input_for(p, i, chain->start, options_.donated, taken, last_) : -1;
      if (alias < 0) {
        alias = donated_input_for(p, i, written, options_.donated, taken, last_);
        if (alias >= 0 && chain) {
          if (chain->size > p.type(v).size_bytes()) alias = -1;
          else chain = nullptr;
        }
      }
      if (alias >= 0) {
        plan.output_alias[i] = alias;
        taken[idx(alias)] = 1;
      }
      if (chain) {
        chain->output_of = static_cast<int>(i);
        for (ir::ValueId w : chain->values) plan.slots[idx(w)] = plan.slots[idx(v)];
      }
    }
  }

  // Offsets in each kind's arena, and when each buffer is acquired and released.
  void pack_arenas() {
    MemoryPlan& plan = *plan_;
    for (int k = 0; k < kNumMemoryKinds; ++k)
      plan.arena_size[idx(k)] = pack(plan.buffers, static_cast<MemoryKind>(k));
    if (!outputs_external_ && options_.temporaries_in_outputs) place_temporaries_in_outputs();
    for (size_t b = 0; b < plan.buffers.size(); ++b) {
      const Buffer& buf = plan.buffers[b];
      if (buf.output_of >= 0) continue;  // in an output's allocation, not the arena
      plan.acquire_before[idx(buf.start)].push_back(static_cast<int>(b));
      if (buf.end < n_) plan.release_after[idx(buf.end)].push_back(static_cast<int>(b));
    }
  }

  // Temporaries into the outputs' allocations while those hold nothing. An output's allocation is
  // the call's from its start (compile allocates each output before the first equation runs, or it
  // is a donated argument's buffer), so from the start, or from the donated argument's last read,
  // until the first equation that writes the output (its own, an asynchronous start into it, or the start of
  // an in-place chain it took over) its bytes are free. Buffers that live entirely within such a
  // window are placed there, each in the smallest allocation with a gap that fits it among the
  // buffers already placed there at the same time; so is a buffer that dies where the output is
  // written over it in place, at the allocation's start. Body regions stay in the arena (a body
  // addresses its buffers from its region's offset in the arena). The arenas are then packed again
  // without them; a kind whose arena does not shrink keeps its first packing.
  void place_temporaries_in_outputs() {
    std::vector<Room> rooms = output_rooms();
    if (rooms.empty()) return;
    std::stable_sort(rooms.begin(), rooms.end(), [](const Room& a, const Room& b) { return a.size < b.size; });
    std::vector<std::vector<Buffer>> options;
    for (const std::vector<size_t>& order : placement_orders(rooms)) options.push_back(place_in_rooms(rooms, order));
    keep_smaller_arenas(options);
  }

  // Per output: the first equation that writes it (n_: none).
  std::vector<int> first_writes() const {
    std::vector<int> first_write(p_.outputs.size(), n_);
    for (int e = 0; e < n_; ++e)
      for (ir::ValueId v : p_.equations[idx(e)].outputs) {
        const Slot& s = plan_->slots[idx(v)];
        if (s.where != Slot::Where::external_output || s.index < 0 || idx(s.index) >= first_write.size()) continue;
        int& first = first_write[idx(s.index)];
        first = std::min(first, e);
      }
    return first_write;
  }

  // A room per output with an allocation of its own and bytes, where the window before its first
  // write or the buffers it may be written over in place are not empty.
  std::vector<Room> output_rooms() const {
    std::vector<Room> rooms;
    const std::vector<int> first_write = first_writes();
    for (size_t i = 0; i < p_.outputs.size(); ++i) {
      const Slot& s = plan_->slots[idx(p_.outputs[i])];
      if (s.where != Slot::Where::external_output || s.index != static_cast<int>(i)) continue;
      Room r;
      r.output = static_cast<int>(i);
      r.kind = p_.type(p_.outputs[i]).kind;
      r.size = p_.type(p_.outputs[i]).size_bytes();
      if (int alias = plan_->output_alias[i]; alias >= 0) r.lo = last_[idx(p_.inputs[idx(alias)])] + 1;
      r.hi = first_write[i] - 1;
      if (first_write[i] < n_) r.in_place = written_over(first_write[i], p_.outputs[i], r);
      if ((r.lo <= r.hi || !r.in_place.empty()) && r.size > 0) rooms.push_back(std::move(r));
    }
    return rooms;
  }

  // The equation that writes the output may write it over an input of its type that dies there
  // (in_place_candidates): that input's buffer may end at the write, at the allocation's start,
  // where the output's elements will be. One per equation: a kernel writes each of its outputs over
  // at most the one input the planner gives it. The buffers equation `writer` may write `out`
  // (room r's output) over.
  std::vector<int> written_over(int writer, ir::ValueId out, const Room& r) const {
    std::vector<int> buffers;
    const ir::Equation& eq = p_.equations[idx(writer)];
    if (ir::has(eq.prim, ir::kAsyncStart) || std::find(eq.outputs.begin(), eq.outputs.end(), out) == eq.outputs.end())
      return buffers;
    for (size_t c : in_place_candidates(eq)) {
      ir::ValueId u = eq.inputs[c];
      const Slot& su = plan_->slots[idx(u)];
      if (su.where != Slot::Where::arena || su.buffer < 0 || last_[idx(u)] != writer || p_.type(u).kind != r.kind ||
          p_.type(u).size_bytes() != r.size)
        continue;
      const Buffer& b = plan_->buffers[idx(su.buffer)];
      if (b.end == writer && b.values.back() == u) buffers.push_back(su.buffer);
    }
    return buffers;
  }

  // Two orders, as pack tries two: largest first, and the buffers an output may be written over
  // first (they fit only their writer's allocations, at the start). Each lists the buffers that
  // may move: not already in an output's allocation, not a body's region, not empty.
  std::vector<std::vector<size_t>> placement_orders(const std::vector<Room>& rooms) const {
    const std::vector<Buffer>& buffers = plan_->buffers;
    std::vector<size_t> by_size;
    for (size_t j = 0; j < buffers.size(); ++j) {
      const Buffer& b = buffers[j];
      if (b.output_of < 0 && b.body_of < 0 && b.size > 0) by_size.push_back(j);
    }
    std::stable_sort(by_size.begin(), by_size.end(), [&](size_t a, size_t b) {
      const Buffer &x = buffers[a], &y = buffers[b];
      return x.size != y.size ? x.size > y.size : x.start < y.start;
    });
    std::vector<size_t> writable_first = by_size;
    std::vector<char> writable(buffers.size(), 0);
    for (const Room& r : rooms)
      for (int j : r.in_place) writable[idx(j)] = 1;
    std::stable_sort(writable_first.begin(), writable_first.end(),
                     [&](size_t a, size_t b) { return writable[a] > writable[b]; });
    return {by_size, writable_first};
  }

  // A copy of the buffers with each, in `order`, placed in the first room (smallest first) that
  // has a gap for it over its whole life; those placed are listed in their rooms.
  std::vector<Buffer> place_in_rooms(std::vector<Room>& rooms, const std::vector<size_t>& order) const {
    std::vector<Buffer> buffers = plan_->buffers;
    for (Room& r : rooms) r.placed.clear();
    std::vector<char> writer_used(idx(n_) + 1, 0);  // an equation whose output took an input
    for (size_t j : order) {
      Buffer& b = buffers[j];
      for (Room& r : rooms) {
        if (r.kind != b.kind || r.size < b.size || b.start < r.lo) continue;
        const int writer = r.hi + 1;
        const bool in_place = b.end == writer &&
                              std::count(r.in_place.begin(), r.in_place.end(), static_cast<int>(j)) > 0 &&
                              !writer_used[idx(writer)];
        if (b.end > r.hi && !in_place) continue;
        const int64_t offset = smallest_gap(r, buffers, b, in_place);
        if (offset < 0) continue;
        b.offset = offset;
        b.output_of = r.output;
        r.placed.push_back(j);
        if (in_place) writer_used[idx(writer)] = 1;
        break;
      }
    }
    return buffers;
  }

  // Per kind, the arena packed again without the buffers each option placed in outputs: the
  // smallest wins; a kind no option shrinks keeps its first packing.
  void keep_smaller_arenas(std::vector<std::vector<Buffer>>& options) {
    MemoryPlan& plan = *plan_;
    for (int k = 0; k < kNumMemoryKinds; ++k) {
      const auto kind = static_cast<MemoryKind>(k);
      int64_t& arena = plan.arena_size[idx(k)];
      int chosen = -1;
      for (size_t o = 0; o < options.size(); ++o)
        if (int64_t size = pack(options[o], kind); size < arena) {
          arena = size;
          chosen = static_cast<int>(o);
        }
      if (chosen >= 0)
        for (size_t j = 0; j < plan.buffers.size(); ++j)
          if (plan.buffers[j].kind == kind) plan.buffers[j] = options[idx(chosen)][j];
    }
  }

  // Live bytes per kind at each position (n: after the last equation), and where they peak.
  void find_peaks() {
    MemoryPlan& plan = *plan_;
    std::vector<std::array<int64_t, kNumMemoryKinds>> delta(idx(n_) + 2);
    for (const Buffer& b : plan.buffers) {
      if (b.output_of >= 0) continue;
      delta[idx(b.start)][kind_index(b.kind)] += b.size;
      delta[idx(b.end) + 1][kind_index(b.kind)] -= b.size;
    }
    std::array<int64_t, kNumMemoryKinds> live{};
    for (int t = 0; t <= n_; ++t)
      for (size_t k = 0; k < kNumMemoryKinds; ++k) {
        live[k] += delta[idx(t)][k];
        if (live[k] > plan.peak_live[k]) {
          plan.peak_live[k] = live[k];
          plan.peak_position[k] = t;
        }
      }
  }

  const ir::Program& p_;
  const bool outputs_external_;
  const PlanOptions& options_;
  std::shared_ptr<MemoryPlan> plan_;
  const int n_;
  const size_t nv_;
  std::vector<int> last_;  // per value: its last reader (-1: none)
};

std::shared_ptr<const MemoryPlan> plan_program(const ir::Program& p, bool outputs_external, const Streams* streams,
                                               const PlanOptions& options) {
  return BufferAssigner(p, outputs_external, options).run(streams);
}

}  // namespace

}  // namespace ferry::compiler
