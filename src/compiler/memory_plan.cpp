#include "compiler/memory_plan.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "ferry/error.h"

namespace ferry::compiler {
namespace {

int64_t aligned(int64_t bytes) { return (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment; }

}  // namespace

std::vector<size_t> in_place_inputs(const ir::Equation& eq) {
  switch (eq.prim) {
    case Primitive::neg: case Primitive::exp: case Primitive::log: case Primitive::sin: case Primitive::cos:
    case Primitive::tanh: case Primitive::logistic: case Primitive::sqrt: case Primitive::rsqrt:
    case Primitive::abs: case Primitive::sign: case Primitive::device_put: case Primitive::dynamic_update_slice:
    case Primitive::copy_done:  // always: it yields the buffer its copy_start filled
    case Primitive::checkpoint_name:  // an identity: the kernel skips the copy when it writes in place
      return {0};
    case Primitive::add: case Primitive::sub: case Primitive::mul: case Primitive::div: case Primitive::max:
    case Primitive::min: case Primitive::pow:
      return {0, 1};
    case Primitive::select:
      return {1, 2};
    default:
      return {};
  }
}

namespace {

// Offsets for every buffer of one kind: largest first, each at the smallest gap that fits among
// the buffers already placed that are live at the same time (else above them all).
int64_t pack(std::vector<Buffer>& buffers, MemoryKind kind) {
  std::vector<size_t> order;
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].kind == kind) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (buffers[a].size != buffers[b].size) return buffers[a].size > buffers[b].size;
    return buffers[a].start < buffers[b].start;
  });
  std::vector<size_t> placed;
  std::vector<std::pair<int64_t, int64_t>> busy;
  int64_t arena = 0;
  for (size_t i : order) {
    Buffer& b = buffers[i];
    busy.clear();
    for (size_t j : placed) {
      const Buffer& p = buffers[j];
      if (p.start <= b.end && b.start <= p.end && p.size > 0) busy.emplace_back(p.offset, p.offset + p.size);
    }
    std::sort(busy.begin(), busy.end());
    int64_t best = -1, best_gap = std::numeric_limits<int64_t>::max(), frontier = 0;
    for (auto [lo, hi] : busy) {
      int64_t gap = lo - frontier;
      if (gap >= b.size && gap < best_gap) {
        best = frontier;
        best_gap = gap;
      }
      frontier = std::max(frontier, hi);
    }
    b.offset = best >= 0 ? best : frontier;
    arena = std::max(arena, b.offset + b.size);
    placed.push_back(i);
  }
  return arena;
}

}  // namespace

Streams find_streams(const ir::Program& body, int num_carry, int num_xs) {
  Streams s;
  const size_t nv = body.values.size();
  std::vector<int> readers(nv, 0), producer(nv, -1);
  std::vector<char> is_input(nv, 0), is_output(nv, 0);
  for (ir::ValueId v : body.inputs) is_input[static_cast<size_t>(v)] = 1;
  for (ir::ValueId v : body.outputs) is_output[static_cast<size_t>(v)] = 1;
  for (size_t e = 0; e < body.equations.size(); ++e) {
    for (ir::ValueId v : body.equations[e].inputs) ++readers[static_cast<size_t>(v)];
    for (ir::ValueId v : body.equations[e].outputs) producer[static_cast<size_t>(v)] = static_cast<int>(e);
  }
  for (const ir::Equation& done : body.equations) {
    if (done.prim != Primitive::copy_done) continue;
    const ir::Equation& start = body.equations[static_cast<size_t>(producer[static_cast<size_t>(done.inputs[0])])];
    ir::ValueId src = start.inputs[0], result = done.outputs[0];
    if (readers[static_cast<size_t>(done.inputs[0])] != 1) continue;
    // Prefetch: an xs slice in host memory, read by nothing but this copy to the device.
    for (int i = num_carry; i < num_carry + num_xs; ++i)
      if (body.inputs[static_cast<size_t>(i)] == src && readers[static_cast<size_t>(src)] == 2 &&
          body.type(result).kind == MemoryKind::device && !is_output[static_cast<size_t>(result)])
        s.prefetched.emplace_back(result, i);
    // Postpone: a ys output in host memory filled from a device value computed in the body.
    for (size_t o = static_cast<size_t>(num_carry); o < body.outputs.size(); ++o)
      if (body.outputs[o] == result && body.type(src).kind == MemoryKind::device && !is_input[static_cast<size_t>(src)] &&
          !is_output[static_cast<size_t>(src)] && producer[static_cast<size_t>(src)] >= 0)
        s.postponed.emplace_back(src, static_cast<int>(o));
  }
  return s;
}

namespace {
std::shared_ptr<const MemoryPlan> plan_program(const ir::Program& p, bool outputs_external, const Streams* streams,
                                               const PlanOptions& options);

// Per output, the donated input whose buffer it can be written into, or -1. The argument's buffer
// becomes the output's at the output's first write: the equation that defines it, or for a copy the
// copy_start that begins filling it. Every read of the argument must come before that, or be the
// equation itself writing in place.
std::vector<int> alias_outputs(const ir::Program& p, const std::vector<char>& donated) {
  std::vector<int> alias(p.outputs.size(), -1);
  const size_t nv = p.values.size();
  std::vector<int> last(nv, -1), producer(nv, -1);
  for (size_t e = 0; e < p.equations.size(); ++e) {
    for (ir::ValueId v : p.equations[e].inputs) last[static_cast<size_t>(v)] = static_cast<int>(e);
    for (ir::ValueId v : p.equations[e].outputs) producer[static_cast<size_t>(v)] = static_cast<int>(e);
  }
  std::vector<char> taken(p.inputs.size(), 0);
  for (size_t o = 0; o < p.outputs.size(); ++o) {
    ir::ValueId v = p.outputs[o];
    int e = producer[static_cast<size_t>(v)];
    if (e < 0 || p.type(v).size_bytes() == 0) continue;
    const ir::Equation& eq = p.equations[static_cast<size_t>(e)];
    int first_write = e;
    if (eq.prim == Primitive::copy_done) first_write = producer[static_cast<size_t>(eq.inputs[0])];
    for (size_t i = 0; i < p.inputs.size() && i < donated.size(); ++i) {
      ir::ValueId u = p.inputs[i];
      if (!donated[i] || taken[i] || !(p.type(u) == p.type(v))) continue;
      int read = last[static_cast<size_t>(u)];
      bool in_place = false;
      if (read == first_write && eq.prim != Primitive::copy_done)
        for (size_t c : in_place_inputs(eq)) in_place = in_place || eq.inputs[c] == u;
      if (read < first_write || in_place) {
        alias[o] = static_cast<int>(i);
        taken[i] = 1;
        break;
      }
    }
  }
  return alias;
}

}  // namespace

std::shared_ptr<const MemoryPlan> plan_memory(const ir::Program& p, bool outputs_external, const PlanOptions& options) {
  return plan_program(p, outputs_external, nullptr, options);
}

namespace {

std::shared_ptr<const MemoryPlan> plan_program(const ir::Program& p, bool outputs_external, const Streams* streams,
                                               const PlanOptions& options) {
  auto plan = std::make_shared<MemoryPlan>();
  const int n = static_cast<int>(p.equations.size());
  const size_t nv = p.values.size();
  plan->slots.resize(nv);
  plan->bodies.resize(static_cast<size_t>(n));
  plan->acquire_before.resize(static_cast<size_t>(n));
  plan->release_after.resize(static_cast<size_t>(n));
  plan->skip.assign(static_cast<size_t>(n), 0);
  plan->workspace.assign(static_cast<size_t>(n), -1);
  plan->output_alias.assign(p.outputs.size(), -1);
  if (!outputs_external && !options.donated.empty()) plan->output_alias = alias_outputs(p, options.donated);

  std::vector<int> last(nv, -1);
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    Slot& s = plan->slots[static_cast<size_t>(p.inputs[i])];
    s.where = outputs_external ? Slot::Where::external_input : Slot::Where::argument;
    s.kind = p.type(p.inputs[i]).kind;
    s.index = static_cast<int>(i);
  }
  for (int e = 0; e < n; ++e)
    for (ir::ValueId v : p.equations[static_cast<size_t>(e)].inputs) last[static_cast<size_t>(v)] = e;
  // Outputs live outside the arena: in the enclosing equation's values, or at the top level in
  // allocations of their own that the returned Arrays keep (or a donated argument's buffer).
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    ir::ValueId v = p.outputs[i];
    Slot& s = plan->slots[static_cast<size_t>(v)];
    if (s.where != Slot::Where::arena || s.index >= 0)
      throw Error(ErrorCode::internal, fmt::format("memory plan: output {} of {} is an input or another output; "
                                                   "materialize_outputs gives each output a value of its own",
                                                   i, p.name));
    s.where = Slot::Where::external_output;
    s.kind = p.type(v).kind;
    s.index = static_cast<int>(i);
  }

  // Streamed slices: the scan runner does these copies; the body sees extra external values.
  if (streams != nullptr) {
    std::vector<int> producer(nv, -1);
    for (int e = 0; e < n; ++e)
      for (ir::ValueId v : p.equations[static_cast<size_t>(e)].outputs) producer[static_cast<size_t>(v)] = e;
    auto skip_copy = [&](int done) {
      plan->skip[static_cast<size_t>(done)] = 1;
      plan->skip[static_cast<size_t>(producer[static_cast<size_t>(p.equations[static_cast<size_t>(done)].inputs[0])])] = 1;
    };
    int extra_in = static_cast<int>(p.inputs.size()), extra_out = static_cast<int>(p.outputs.size());
    for (auto [value, input] : streams->prefetched) {
      Slot& s = plan->slots[static_cast<size_t>(value)];
      s = Slot{Slot::Where::external_input, p.type(value).kind, -1, extra_in++};
      skip_copy(producer[static_cast<size_t>(value)]);
      (void)input;
    }
    for (auto [value, output] : streams->postponed) {
      plan->slots[static_cast<size_t>(value)] = Slot{Slot::Where::external_output, p.type(value).kind, -1, extra_out++};
      skip_copy(producer[static_cast<size_t>(p.outputs[static_cast<size_t>(output)])]);
    }
    for (int e = 0; e < n; ++e)
      if (plan->skip[static_cast<size_t>(e)])
        for (ir::ValueId v : p.equations[static_cast<size_t>(e)].outputs) {
          Slot& s = plan->slots[static_cast<size_t>(v)];
          if (s.where == Slot::Where::arena) s = Slot{Slot::Where::external_input, p.type(v).kind, -1, -1};
        }
  }

  // A copy whose result is an external output fills that destination directly.
  for (const ir::Equation& eq : p.equations)
    if (eq.prim == Primitive::copy_done) {
      const Slot& out = plan->slots[static_cast<size_t>(eq.outputs[0])];
      if (out.where == Slot::Where::external_output) plan->slots[static_cast<size_t>(eq.inputs[0])] = out;
    }

  auto new_buffer = [&](MemoryKind kind, int64_t bytes, int start, int end) {
    Buffer b;
    b.kind = kind;
    b.size = aligned(bytes);
    b.start = start;
    b.end = end;
    plan->buffers.push_back(b);
    return static_cast<int>(plan->buffers.size() - 1);
  };
  for (int e = 0; e < n; ++e) {
    const ir::Equation& eq = p.equations[static_cast<size_t>(e)];
    std::vector<size_t> candidates = in_place_inputs(eq);
    if (plan->skip[static_cast<size_t>(e)]) continue;  // the scan runner's copy
    if (options.workspace && eq.subprograms.empty())
      if (int64_t bytes = options.workspace(p, eq); bytes > 0) {
        int b = new_buffer(MemoryKind::device, bytes, e, e);
        plan->buffers[static_cast<size_t>(b)].workspace_of = e;
        plan->workspace[static_cast<size_t>(e)] = b;
      }
    for (ir::ValueId v : eq.outputs) {
      Slot& s = plan->slots[static_cast<size_t>(v)];
      s.kind = p.type(v).kind;
      if (s.where == Slot::Where::external_output || s.where == Slot::Where::external_input) continue;
      int end = std::max(last[static_cast<size_t>(v)], e);
      int shared = -1;
      for (size_t c : candidates) {
        ir::ValueId u = eq.inputs[c];
        const Slot& su = plan->slots[static_cast<size_t>(u)];
        if (su.where != Slot::Where::arena || su.buffer < 0 || last[static_cast<size_t>(u)] != e) continue;
        const ir::Type &tu = p.type(u), &tv = p.type(v);
        Buffer& b = plan->buffers[static_cast<size_t>(su.buffer)];
        if (tu.kind != tv.kind || tu.size_bytes() != tv.size_bytes() || b.end != e || b.body_of >= 0) continue;
        shared = su.buffer;
        break;
      }
      if (shared >= 0) {
        plan->buffers[static_cast<size_t>(shared)].end = end;
      } else {
        shared = new_buffer(s.kind, p.type(v).size_bytes(), e, end);
      }
      plan->buffers[static_cast<size_t>(shared)].values.push_back(v);
      s.where = Slot::Where::arena;
      s.buffer = shared;
    }
    if (eq.prim == Primitive::scan || eq.prim == Primitive::checkpoint) {
      BodyPlan body;
      const ir::Program& sub = *eq.subprograms.at(0);
      Streams found;
      if (eq.prim == Primitive::scan) {
        const auto& sp = std::get<ir::ScanParams>(eq.params);
        found = find_streams(sub, static_cast<int>(sp.num_carry), static_cast<int>(sp.num_xs));
      }
      body.plan = plan_program(sub, /*outputs_external=*/true, &found, PlanOptions{options.workspace, {}});
      // Each streamed slice: the io it replaces, the extra external index, two device buffers.
      auto stream = [&](const std::vector<std::pair<ir::ValueId, int>>& found_slices, int next_external,
                        std::vector<StreamedSlice>& out) {
        for (auto [value, io] : found_slices) {
          StreamedSlice s{io, next_external++, {}};
          for (int& b : s.buffers) {
            b = new_buffer(MemoryKind::device, sub.type(value).size_bytes(), e, e);
            plan->buffers[static_cast<size_t>(b)].stream_of = e;
          }
          out.push_back(s);
        }
      };
      stream(found.prefetched, static_cast<int>(sub.inputs.size()), body.prefetched);
      stream(found.postponed, static_cast<int>(sub.outputs.size()), body.postponed);
      for (int k = 0; k < kNumMemoryKinds; ++k)
        if (body.plan->arena_size[static_cast<size_t>(k)] > 0) {
          body.region[static_cast<size_t>(k)] =
              new_buffer(static_cast<MemoryKind>(k), body.plan->arena_size[static_cast<size_t>(k)], e, e);
          plan->buffers[static_cast<size_t>(body.region[static_cast<size_t>(k)])].body_of = e;
        }
      if (eq.prim == Primitive::scan) {
        const auto& sp = std::get<ir::ScanParams>(eq.params);
        for (int64_t c = 0; c < sp.num_carry; ++c) {
          const ir::Type& t = p.type(eq.outputs[static_cast<size_t>(c)]);
          int b = new_buffer(t.kind, t.size_bytes(), e, e);
          plan->buffers[static_cast<size_t>(b)].scratch_of = e;
          body.carry_scratch.push_back(b);
        }
      }
      plan->bodies[static_cast<size_t>(e)] = std::move(body);
    }
  }

  for (int k = 0; k < kNumMemoryKinds; ++k)
    plan->arena_size[static_cast<size_t>(k)] = pack(plan->buffers, static_cast<MemoryKind>(k));
  for (size_t b = 0; b < plan->buffers.size(); ++b) {
    const Buffer& buf = plan->buffers[b];
    plan->acquire_before[static_cast<size_t>(buf.start)].push_back(static_cast<int>(b));
    if (buf.end < n) plan->release_after[static_cast<size_t>(buf.end)].push_back(static_cast<int>(b));
  }
  // Live bytes per kind at each position (n: after the last equation), and where they peak.
  std::vector<std::array<int64_t, kNumMemoryKinds>> delta(static_cast<size_t>(n) + 2);
  for (const Buffer& b : plan->buffers) {
    delta[static_cast<size_t>(b.start)][kind_index(b.kind)] += b.size;
    delta[static_cast<size_t>(b.end) + 1][kind_index(b.kind)] -= b.size;
  }
  std::array<int64_t, kNumMemoryKinds> live{};
  for (int t = 0; t <= n; ++t)
    for (size_t k = 0; k < kNumMemoryKinds; ++k) {
      live[k] += delta[static_cast<size_t>(t)][k];
      if (live[k] > plan->peak_live[k]) {
        plan->peak_live[k] = live[k];
        plan->peak_position[k] = t;
      }
    }
  return plan;
}

}  // namespace

}  // namespace ferry::compiler
