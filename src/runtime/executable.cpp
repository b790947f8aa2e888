#include "runtime/executable.h"

#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "ferry/error.h"
#include "runtime/cpu/kernels.h"
#include "runtime/storage.h"
#include "runtime/copy_queue.h"

namespace ferry::runtime {

using compiler::Slot;

Executable::Executable(std::shared_ptr<const ir::Program> program, std::shared_ptr<const compiler::MemoryPlan> plan,
                       const std::string& backend)
    : program_(std::move(program)), plan_(std::move(plan)) {
  if (backend != "cpu")
    throw Error(ErrorCode::unimplemented, fmt::format("backend \"{}\" is not available; this build has \"cpu\"", backend));
  const ir::Program& p = *program_;
  kernels_.resize(p.equations.size());
  bodies_.resize(p.equations.size());
  for (size_t e = 0; e < p.equations.size(); ++e) {
    const ir::Equation& eq = p.equations[e];
    if (plan_->bodies[e]) {
      bodies_[e] = std::make_shared<const Executable>(eq.subprograms.at(0), plan_->bodies[e]->plan, backend);
      continue;
    }
    if (eq.prim == Primitive::copy_start || eq.prim == Primitive::copy_done) continue;  // the copy queue's
    kernels_[e] = cpu::kernel(eq.prim);
    if (kernels_[e] == nullptr || !eq.subprograms.empty())
      throw Error(ErrorCode::unimplemented, fmt::format("the cpu backend has no kernel for {}", primitive_name(eq.prim)));
  }
}

void* Executable::address(const Frame& f, ir::ValueId v) const {
  const Slot& s = plan_->slots[static_cast<size_t>(v)];
  switch (s.where) {
    case Slot::Where::arena: {
      const compiler::Buffer& b = plan_->buffers[static_cast<size_t>(s.buffer)];
      return f.arenas->base(b.kind) + f.origin[compiler::kind_index(b.kind)] + b.offset;
    }
    case Slot::Where::argument:
    case Slot::Where::external_input:
      return const_cast<void*>(f.inputs[static_cast<size_t>(s.index)]);
    case Slot::Where::external_output:
      return f.outputs[static_cast<size_t>(s.index)];
  }
  return nullptr;
}

Executable::Frame Executable::body_frame(size_t e, const Frame& f) const {
  Frame body;
  body.arenas = f.arenas;
  body.stats = f.stats;
  body.copies = f.copies;
  body.timeline = f.timeline;
  const compiler::BodyPlan& bp = *plan_->bodies[e];
  for (size_t k = 0; k < kNumKinds; ++k) {
    int r = bp.region[k];
    body.origin[k] = f.origin[k] + (r >= 0 ? plan_->buffers[static_cast<size_t>(r)].offset : 0);
  }
  return body;
}

void Executable::run_call(size_t e, const Frame& f) const {
  const ir::Equation& eq = program_->equations[e];
  Frame body = body_frame(e, f);
  for (ir::ValueId v : eq.inputs) body.inputs.push_back(address(f, v));
  for (ir::ValueId v : eq.outputs) body.outputs.push_back(address(f, v));
  bodies_[e]->execute(body);
}

void Executable::run_scan(size_t e, const Frame& f) const {
  const ir::Equation& eq = program_->equations[e];
  const ir::Program& body = bodies_[e]->program();
  const auto& p = std::get<ir::ScanParams>(eq.params);
  const size_t nc = static_cast<size_t>(p.num_carry), nx = static_cast<size_t>(p.num_xs);
  const compiler::BodyPlan& bp = *plan_->bodies[e];
  auto buffer_address = [&](int b) {
    const compiler::Buffer& buf = plan_->buffers[static_cast<size_t>(b)];
    return f.arenas->base(buf.kind) + f.origin[compiler::kind_index(buf.kind)] + buf.offset;
  };
  Frame step = body_frame(e, f);
  std::vector<const void*> carry(nc);
  std::vector<void*> out_carry(nc), scratch(nc);
  for (size_t j = 0; j < nc; ++j) {
    carry[j] = address(f, eq.inputs[j]);
    out_carry[j] = address(f, eq.outputs[j]);
    scratch[j] = buffer_address(bp.carry_scratch[j]);
  }
  step.inputs.resize(eq.inputs.size() + bp.prefetched.size());
  step.outputs.resize(body.outputs.size() + bp.postponed.size());
  for (size_t j = nc + nx; j < eq.inputs.size(); ++j) step.inputs[j] = address(f, eq.inputs[j]);
  auto index_of = [&](int64_t s) { return p.reverse ? p.length - 1 - s : s; };
  auto slice = [&](ir::ValueId stacked, ir::ValueId body_value, int64_t i) {
    return static_cast<char*>(address(f, stacked)) + i * body.type(body_value).size_bytes();
  };
  // Double-buffered streams: (ticket, buffer) per parity.
  auto copy = [&](void* dst, const void* src, int64_t bytes, bool to_host) {
    (to_host ? f.stats->bytes_to_host : f.stats->bytes_to_device) += bytes;
    CopyQueue::Observer observer;
    if (f.timeline) {
      Timeline* timeline = f.timeline;
      std::string name = to_host ? "scan: device -> host (streamed)" : "scan: host -> device (prefetch)";
      observer = [timeline, name](uint64_t, size_t n, double begin, double end) {
        timeline->copy(name, static_cast<int64_t>(n), begin, end);
      };
    }
    return f.copies->enqueue(dst, src, static_cast<size_t>(bytes), observer);
  };
  std::vector<std::array<uint64_t, 2>> fetch_ticket(bp.prefetched.size()), store_ticket(bp.postponed.size());
  auto prefetch = [&](size_t k, int64_t s) {
    const compiler::StreamedSlice& st = bp.prefetched[k];
    ir::ValueId in = body.inputs[static_cast<size_t>(st.io)];
    fetch_ticket[k][s % 2] = copy(buffer_address(st.buffers[s % 2]), slice(eq.inputs[static_cast<size_t>(st.io)], in, index_of(s)),
                                  body.type(in).size_bytes(), false);
  };
  if (p.length > 0)
    for (size_t k = 0; k < bp.prefetched.size(); ++k) prefetch(k, 0);
  for (int64_t s = 0; s < p.length; ++s) {
    const int64_t i = index_of(s);
    // Carries alternate between the scratch buffer and the output so the last step lands in the output.
    const bool to_output = (p.length - 1 - s) % 2 == 0;
    for (size_t j = 0; j < nc; ++j) {
      step.inputs[j] = carry[j];
      step.outputs[j] = to_output ? out_carry[j] : scratch[j];
    }
    for (size_t j = 0; j < nx; ++j) step.inputs[nc + j] = slice(eq.inputs[nc + j], body.inputs[nc + j], i);
    for (size_t j = nc; j < body.outputs.size(); ++j) step.outputs[j] = slice(eq.outputs[j], body.outputs[j], i);
    for (size_t k = 0; k < bp.prefetched.size(); ++k) {
      f.copies->wait(fetch_ticket[k][s % 2]);
      step.inputs[static_cast<size_t>(bp.prefetched[k].external)] = buffer_address(bp.prefetched[k].buffers[s % 2]);
      if (s + 1 < p.length) prefetch(k, s + 1);  // the next slice comes in while this step computes
    }
    for (size_t k = 0; k < bp.postponed.size(); ++k) {
      if (store_ticket[k][s % 2]) f.copies->wait(store_ticket[k][s % 2]);  // the buffer's last copy out
      step.outputs[static_cast<size_t>(bp.postponed[k].external)] = buffer_address(bp.postponed[k].buffers[s % 2]);
    }
    bodies_[e]->execute(step);
    for (size_t k = 0; k < bp.postponed.size(); ++k) {
      const compiler::StreamedSlice& st = bp.postponed[k];
      ir::ValueId out = body.outputs[static_cast<size_t>(st.io)];
      store_ticket[k][s % 2] = copy(slice(eq.outputs[static_cast<size_t>(st.io)], out, i),
                                    buffer_address(st.buffers[s % 2]), body.type(out).size_bytes(), true);
    }
    for (size_t j = 0; j < nc; ++j) carry[j] = step.outputs[j];
  }
  for (auto& t : store_ticket)
    for (uint64_t ticket : t)
      if (ticket) f.copies->wait(ticket);
  if (p.length == 0)
    for (size_t j = 0; j < nc; ++j) {
      size_t bytes = static_cast<size_t>(program_->type(eq.outputs[j]).size_bytes());
      if (bytes) std::memcpy(out_carry[j], carry[j], bytes);
    }
}

void Executable::start_copy(size_t e, const Frame& f, std::vector<uint64_t>& tickets) const {
  const ir::Program& p = *program_;
  const ir::Equation& eq = p.equations[e];
  ir::ValueId src = eq.inputs[0], dst = eq.outputs[0];
  MemoryKind from = p.type(src).kind, to = p.type(dst).kind;
  int64_t bytes = p.type(dst).size_bytes();
  if (from == MemoryKind::device && to != MemoryKind::device) f.stats->bytes_to_host += bytes;
  if (from != MemoryKind::device && to == MemoryKind::device) f.stats->bytes_to_device += bytes;
  CopyQueue::Observer observer;
  if (f.timeline) {
    std::string name = fmt::format("{} -> {}", memory_kind_name(from), memory_kind_name(to));
    Timeline* timeline = f.timeline;
    observer = [timeline, name](uint64_t, size_t n, double begin, double end) {
      timeline->copy(name, static_cast<int64_t>(n), begin, end);
    };
  }
  tickets[static_cast<size_t>(dst)] = f.copies->enqueue(address(f, dst), address(f, src), static_cast<size_t>(bytes), observer);
}

void Executable::execute(const Frame& f) const {
  const ir::Program& p = *program_;
  const compiler::MemoryPlan& plan = *plan_;
  auto take = [&](int b, bool acquire) {
    const compiler::Buffer& buf = plan.buffers[static_cast<size_t>(b)];
    if (buf.body_of >= 0) return;  // a body region: the body takes its own buffers inside it
    int64_t offset = f.origin[compiler::kind_index(buf.kind)] + buf.offset;
    if (acquire) f.arenas->acquire(buf.kind, offset, buf.size);
    else f.arenas->release(buf.kind, offset, buf.size);
  };
  std::vector<ConstView> in;
  std::vector<MutView> out;
  std::vector<uint64_t> tickets(p.values.size(), 0);  // copies in flight, by destination value
  for (size_t e = 0; e < p.equations.size(); ++e) {
    const ir::Equation& eq = p.equations[e];
    if (plan.skip[e]) continue;  // a copy the enclosing scan runner streams
    for (int b : plan.acquire_before[e]) take(b, true);
    double begin = f.timeline ? now_seconds() : 0;
    if (eq.prim == Primitive::copy_start) {
      start_copy(e, f, tickets);
    } else if (eq.prim == Primitive::copy_done) {
      f.copies->wait(tickets[static_cast<size_t>(eq.inputs[0])]);
      if (address(f, eq.outputs[0]) != address(f, eq.inputs[0]))
        throw Error(ErrorCode::internal, "memory plan: a copy's result is not where its copy_start wrote");
    } else if (bodies_[e]) {
      if (eq.prim == Primitive::scan) run_scan(e, f);
      else run_call(e, f);
    } else {
      in.clear();
      out.clear();
      for (ir::ValueId v : eq.inputs) in.push_back({address(f, v), &p.type(v)});
      for (ir::ValueId v : eq.outputs) out.push_back({address(f, v), &p.type(v)});
      kernels_[e](eq, in, out);
      if (eq.prim == Primitive::device_put) {
        MemoryKind from = p.type(eq.inputs[0]).kind, to = p.type(eq.outputs[0]).kind;
        int64_t bytes = p.type(eq.outputs[0]).size_bytes();
        if (from == MemoryKind::device && to != MemoryKind::device) f.stats->bytes_to_host += bytes;
        if (from != MemoryKind::device && to == MemoryKind::device) f.stats->bytes_to_device += bytes;
      }
    }
    if (f.timeline && eq.prim != Primitive::copy_start && eq.prim != Primitive::copy_done)
      f.timeline->compute(std::string(primitive_name(eq.prim)), begin, now_seconds());
    for (int b : plan.release_after[e]) take(b, false);
  }
}

std::vector<Array> Executable::run(const std::vector<Array>& args, ExecutionStats& stats, CopyQueue& copies,
                                   Timeline* timeline) const {
  const ir::Program& p = *program_;
  if (args.size() != p.inputs.size())
    throw Error(ErrorCode::invalid_argument,
                fmt::format("{} takes {} argument(s), got {}", p.name, p.inputs.size(), args.size()));
  Frame f;
  int64_t device_args = 0, host_args = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const ir::Type& want = p.type(p.inputs[i]);
    const Array& a = args[i];
    if (!a.defined() || a.dtype() != want.dtype || a.shape() != want.shape || a.memory_kind() != want.kind) {
      std::string got = a.defined() ? ir::to_string(ir::Type{a.dtype(), a.shape(), a.memory_kind()}) : "an empty Array";
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("argument {} of {} must be {}, got {}", i, p.name, ir::to_string(want), got));
    }
    f.inputs.push_back(a.data());
    (want.kind == MemoryKind::device ? device_args : host_args) += want.size_bytes();
  }
  auto start = std::chrono::steady_clock::now();
  auto arenas = std::make_shared<Arenas>(plan_->arena_size);
  arenas->set_timeline(timeline);
  stats = ExecutionStats{};
  f.arenas = arenas.get();
  f.stats = &stats;
  f.copies = &copies;
  f.timeline = timeline;
  try {
    execute(f);
  } catch (...) {
    copies.drain();  // copies in flight still use the arenas that unwinding frees
    throw;
  }
  arenas->set_timeline(nullptr);  // outputs keep the arenas; the timeline may go first
  stats.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stats.device_high_water_bytes = device_args + arenas->high_water(MemoryKind::device);
  stats.host_high_water_bytes =
      host_args + arenas->high_water(MemoryKind::pinned_host) + arenas->high_water(MemoryKind::unpinned_host);
  std::vector<Array> results;
  for (ir::ValueId v : p.outputs) {
    const ir::Type& t = p.type(v);
    auto s = std::make_shared<detail::Storage>();
    s->data = address(f, v);
    s->bytes = static_cast<size_t>(t.size_bytes());
    s->kind = t.kind;
    s->release = [keep = arenas](void*) {};
    results.emplace_back(std::move(s), t.dtype, t.shape, t.kind);
  }
  return results;
}

}  // namespace ferry::runtime
