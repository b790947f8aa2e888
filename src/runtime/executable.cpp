#include "runtime/executable.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "ferry/error.h"
#include "ir/params_text.h"
#include "ir/type.h"
#include "runtime/copy_queue.h"
#include "runtime/process_group.h"
#include "runtime/memory_resource.h"
#include "runtime/storage.h"

namespace ferry::runtime {

using plan::Slot;

namespace {

// A timeline slice's name: the primitive and its first result's type; for a matrix product also
// its operands' types and dimension numbers, for a fused group the primitives of its body in order
// (each once): a trace then tells the groups and products apart.
std::string slice_name(const ir::Equation& eq, const ir::Program& p) {
  std::string name(primitive_name(eq.prim));
  if (eq.prim == ir::op::fused && !eq.subprograms.empty()) {
    std::vector<Primitive> seen;
    for (const ir::Equation& b : eq.subprograms[0]->equations)
      if (std::find(seen.begin(), seen.end(), b.prim) == seen.end()) seen.push_back(b.prim);
    name += "{";
    for (size_t i = 0; i < seen.size(); ++i) name += (i ? "," : "") + std::string(primitive_name(seen[i]));
    name += "}";
  }
  if (eq.prim == Primitive::dot_general) {
    for (ir::ValueId v : eq.inputs) name += " " + ir::to_string(p.type(v));
    name += " " + ir::params_to_string(eq.params) + " ->";
  }
  if (!eq.outputs.empty()) name += " " + ir::to_string(p.type(eq.outputs[0]));
  return name;
}

// The exchange a collective (or its start) runs: as Exchanges::start takes it, and its name.
struct ExchangeOf {
  Exchanges::Kind kind;
  int64_t count;  // elements of the operand, or of the result for a reduce-scatter
  DType dtype;
  const char* what;
};
ExchangeOf exchange_of(const ir::Program& p, const ir::Equation& eq) {
  using Kind = Exchanges::Kind;
  const ir::Type& x = p.type(eq.inputs[0]);
  if (eq.prim == Primitive::psum || eq.prim == ir::op::psum_start)
    return {Kind::all_reduce_sum, x.num_elements(), x.dtype, "psum"};
  if (eq.prim == Primitive::all_gather || eq.prim == ir::op::all_gather_start)
    return {Kind::all_gather, x.num_elements(), x.dtype, "all_gather"};
  return {Kind::reduce_scatter_sum, p.type(eq.outputs[0]).num_elements(), x.dtype, "psum_scatter"};
}

// What a run counts of each exchange it starts (ExecutionStats::bytes_exchanged).
void count_sent(ExecutionStats& stats, const ExchangeOf& x) {
  stats.bytes_exchanged += ring_bytes(x.kind, x.count, x.dtype, processes::count());
}

// Compile's refusal of an equation the backend has no kernel for; `why`, where known, says why.
[[noreturn]] void no_kernel(const Backend& backend, const ir::Equation& eq, const std::string& why) {
  throw Error(ErrorCode::unimplemented, fmt::format("the {} backend has no kernel for {}{}{}", backend.name(),
                                                    primitive_name(eq.prim), why.empty() ? "" : ": ", why));
}

}  // namespace

// The bookkeeping of one execution of a program, sized for it when made: a run fills it in place
// and allocates nothing for it.
struct Executable::State {
  std::vector<uint64_t> tickets;  // per value: the copy or collective in flight into it
  std::vector<double> started;    // per value: when the collective into it started (for the timeline)
  std::vector<const char*> exchange;  // per value: which collective writes it ("psum", ...)
  std::vector<ConstView> in;      // operands of the equation running, sized for the widest
  std::vector<MutView> out;
  // Per equation with a body: the body's frame and state, and a scan's carries and stream tickets.
  struct Body {
    Frame frame;
    std::unique_ptr<State> state;
    std::vector<const void*> carry;
    std::vector<void*> out_carry, scratch;
    std::vector<std::array<uint64_t, 2>> fetch, store;
  };
  std::vector<Body> bodies;
  // Top level only: the arenas' checks (the tracker's room reserved) and their memory, the call's
  // frame, its outputs.
  std::unique_ptr<Arenas> arenas;
  std::array<char*, kNumKinds> arena_base{};
  Frame top;
  std::vector<std::shared_ptr<detail::Storage>> owned;
};

// One finished run's State, taken by the next run (a concurrent run makes its own).
struct Executable::StateCache {
  std::mutex mu;
  std::unique_ptr<State> idle;
};

Executable::Executable(std::shared_ptr<const ir::Program> program, std::shared_ptr<const plan::MemoryPlan> plan,
                       const std::string& backend, Options options)
    : program_(std::move(program)), plan_(std::move(plan)), backend_(&runtime::backend(backend)),
      options_(std::move(options)), cache_(std::make_shared<StateCache>()) {
  const ir::Program& p = *program_;
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    const Slot& s = plan_->slots[static_cast<size_t>(p.outputs[i])];
    if (s.where != Slot::Where::external_output || s.index != static_cast<int>(i))
      throw Error(ErrorCode::internal, fmt::format("executable: output {} of {} is an input or another output; "
                                                   "materialize_outputs gives each output a value of its own",
                                                   i, p.name));
  }
  kernels_.resize(p.equations.size());
  prepared_.resize(p.equations.size());
  bodies_.resize(p.equations.size());
  max_live_ = plan_->buffers.size();
  for (size_t e = 0; e < p.equations.size(); ++e) {
    const ir::Equation& eq = p.equations[e];
    if (plan_->bodies[e]) {
      bodies_[e] = std::make_shared<const Executable>(eq.subprograms.at(0), plan_->bodies[e]->plan, backend);
      max_live_ += bodies_[e]->max_live_;
      continue;
    }
    if (eq.prim == ir::op::copy_start || eq.prim == ir::op::copy_done) continue;  // the copy queue's
    if (async_collective(eq)) {  // the backend's exchanges
      std::string why;
      exchanges_ = backend_->exchanges(&why);
      if (exchanges_ == nullptr) no_kernel(*backend_, eq, why);
      continue;
    }
    kernels_[e] = backend_->kernel(eq.prim);
    // A fused equation's body is the kernel's program, not a nested one (no plan of its own).
    if (kernels_[e] == nullptr || (!eq.subprograms.empty() && eq.prim != ir::op::fused)) {
      std::string why;
      if (ir::has(eq.prim, ir::kCollective) && backend_->exchanges(&why) == nullptr) no_kernel(*backend_, eq, why);
      no_kernel(*backend_, eq, "");
    }
    prepared_[e] = backend_->prepare(eq);
  }
}

std::unique_ptr<Executable::State> Executable::make_state() const {
  const ir::Program& p = *program_;
  auto st = std::make_unique<State>();
  st->tickets.assign(p.values.size(), 0);
  st->started.assign(p.values.size(), 0);
  st->exchange.assign(p.values.size(), nullptr);
  size_t widest_in = 0, widest_out = 0;
  st->bodies.resize(p.equations.size());
  for (size_t e = 0; e < p.equations.size(); ++e) {
    const ir::Equation& eq = p.equations[e];
    widest_in = std::max(widest_in, eq.inputs.size());
    widest_out = std::max(widest_out, eq.outputs.size());
    if (!bodies_[e]) continue;
    const plan::BodyPlan& bp = *plan_->bodies[e];
    const ir::Program& body = bodies_[e]->program();
    State::Body& b = st->bodies[e];
    b.state = bodies_[e]->make_state();
    b.frame.inputs.resize(body.inputs.size() + bp.prefetched.size());
    b.frame.outputs.resize(body.outputs.size() + bp.postponed.size());
    if (eq.prim == Primitive::scan || eq.prim == Primitive::while_loop) {
      const auto nc = eq.prim == Primitive::scan ? static_cast<size_t>(std::get<ir::ScanParams>(eq.params).num_carry)
                                                 : body.outputs.size();
      b.carry.resize(nc);
      b.out_carry.resize(nc);
      b.scratch.resize(nc);
      b.fetch.resize(bp.prefetched.size());
      b.store.resize(bp.postponed.size());
    }
  }
  st->in.resize(widest_in);
  st->out.resize(widest_out);
  return st;
}

void* Executable::address(const Frame& f, ir::ValueId v) const {
  const Slot& s = plan_->slots[static_cast<size_t>(v)];
  switch (s.where) {
    case Slot::Where::arena:
      return buffer_address(f, s.buffer);
    case Slot::Where::argument:
    case Slot::Where::external_input:
      return const_cast<void*>(f.inputs[static_cast<size_t>(s.index)]);
    case Slot::Where::external_output:
      return f.outputs[static_cast<size_t>(s.index)];
  }
  return nullptr;
}

char* Executable::buffer_address(const Frame& f, int buffer) const {
  const plan::Buffer& b = plan_->buffers[static_cast<size_t>(buffer)];
  // A temporary placed in an output's allocation before the output is written (memory_plan.h).
  if (b.output_of >= 0) return static_cast<char*>(f.outputs[static_cast<size_t>(b.output_of)]) + b.offset;
  return f.arenas->base(b.kind) + f.origin[plan::kind_index(b.kind)] + b.offset;
}

// The parts of a body's frame that come from the enclosing one: its arenas, and its region in them.
void Executable::enter_body(size_t e, const Frame& f, Frame& body) const {
  body.arenas = f.arenas;
  body.stats = f.stats;
  body.copies = f.copies;
  body.stream = f.stream;
  body.timeline = f.timeline;
  const plan::BodyPlan& bp = *plan_->bodies[e];
  for (size_t k = 0; k < kNumKinds; ++k) {
    int r = bp.region[k];
    body.origin[k] = f.origin[k] + (r >= 0 ? plan_->buffers[static_cast<size_t>(r)].offset : 0);
  }
}

// A loop's frame (scan, while_loop): the body's region, its carries where they start (the
// operands), end (the results) and alternate with (the scratch buffers), and its loop-invariant
// operands from `invariant_from` on.
void Executable::enter_loop(size_t e, const Frame& f, State& st, size_t num_carry, size_t invariant_from) const {
  const ir::Equation& eq = program_->equations[e];
  const plan::BodyPlan& bp = *plan_->bodies[e];
  State::Body& b = st.bodies[e];
  enter_body(e, f, b.frame);
  for (size_t j = 0; j < num_carry; ++j) {
    b.carry[j] = address(f, eq.inputs[j]);
    b.out_carry[j] = address(f, eq.outputs[j]);
    b.scratch[j] = buffer_address(f, bp.carry_scratch[j]);
  }
  for (size_t j = invariant_from; j < eq.inputs.size(); ++j) b.frame.inputs[j] = address(f, eq.inputs[j]);
}

// Counts a transfer between memory kinds in the run's statistics and queues it on the copy engine,
// named on the timeline's copy lane by `label` (nullptr: "<from> -> <to>").
uint64_t Executable::enqueue_transfer(const Frame& f, void* dst, MemoryKind to, const void* src, MemoryKind from,
                                      int64_t bytes, const char* label) const {
  count_transfer(f, from, to, bytes);
  CopyQueue::Observer observer;
  if (f.timeline) {  // the name is made only for a timeline: a run without one allocates nothing here
    Timeline* timeline = f.timeline;
    std::string name = label ? std::string(label) : fmt::format("{} -> {}", memory_kind_name(from), memory_kind_name(to));
    observer = [timeline, name = std::move(name)](uint64_t, size_t n, double begin, double end) {
      timeline->copy(name, static_cast<int64_t>(n), begin, end);
    };
  }
  return f.copies->enqueue(dst, to, src, from, static_cast<size_t>(bytes), std::move(observer));
}

void Executable::count_transfer(const Frame& f, MemoryKind from, MemoryKind to, int64_t bytes) {
  if (from == MemoryKind::device && to != MemoryKind::device) f.stats->bytes_to_host += bytes;
  if (from != MemoryKind::device && to == MemoryKind::device) f.stats->bytes_to_device += bytes;
}

void Executable::run_call(size_t e, const Frame& f, State& st) const {
  const ir::Equation& eq = program_->equations[e];
  State::Body& b = st.bodies[e];
  enter_body(e, f, b.frame);
  for (size_t i = 0; i < eq.inputs.size(); ++i) b.frame.inputs[i] = address(f, eq.inputs[i]);
  for (size_t i = 0; i < eq.outputs.size(); ++i) b.frame.outputs[i] = address(f, eq.outputs[i]);
  bodies_[e]->execute(b.frame, *b.state);
}

// while_loop: the carries (the predicate first) alternate between the outputs and the scratch
// buffers; the trip count is known only at the end, so the last carry is copied into the outputs
// when it ended in the scratch buffers.
void Executable::run_while(size_t e, const Frame& f, State& st) const {
  const ir::Equation& eq = program_->equations[e];
  const ir::Program& body = bodies_[e]->program();
  const size_t nc = body.outputs.size();
  enter_loop(e, f, st, nc, nc);
  State::Body& b = st.bodies[e];
  Frame& step = b.frame;
  bool to_output = true;
  // The predicate is read on the host: after the stream has computed it.
  auto predicate = [&] {
    bool value = false;
    backend_->copy(&value, b.carry[0], 1, f.stream);
    backend_->synchronize(f.stream);
    return value;
  };
  while (predicate()) {
    for (size_t j = 0; j < nc; ++j) {
      step.inputs[j] = b.carry[j];
      step.outputs[j] = to_output ? b.out_carry[j] : b.scratch[j];
    }
    bodies_[e]->execute(step, *b.state);
    for (size_t j = 0; j < nc; ++j) b.carry[j] = step.outputs[j];
    to_output = !to_output;
  }
  for (size_t j = 0; j < nc; ++j) {
    const auto bytes = static_cast<size_t>(program_->type(eq.outputs[j]).size_bytes());
    if (bytes && b.carry[j] != b.out_carry[j]) backend_->copy(b.out_carry[j], b.carry[j], bytes, f.stream);
  }
}

void Executable::run_scan(size_t e, const Frame& f, State& st) const {
  const ir::Equation& eq = program_->equations[e];
  const ir::Program& body = bodies_[e]->program();
  const auto& p = std::get<ir::ScanParams>(eq.params);
  const size_t nc = static_cast<size_t>(p.num_carry), nx = static_cast<size_t>(p.num_xs);
  const plan::BodyPlan& bp = *plan_->bodies[e];
  enter_loop(e, f, st, nc, nc + nx);
  State::Body& b = st.bodies[e];
  Frame& step = b.frame;
  auto index_of = [&](int64_t s) { return p.reverse ? p.length - 1 - s : s; };
  auto slice = [&](ir::ValueId stacked, ir::ValueId body_value, int64_t i) {
    return static_cast<char*>(address(f, stacked)) + i * body.type(body_value).size_bytes();
  };
  // Double-buffered streams: a ticket per parity.
  auto copy = [&](void* dst, MemoryKind to, const void* src, MemoryKind from, int64_t bytes, bool to_host) {
    return enqueue_transfer(f, dst, to, src, from, bytes,
                            to_host ? "scan: device -> host (streamed)" : "scan: host -> device (prefetch)");
  };
  auto kind_of = [&](int buffer) { return plan_->buffers[static_cast<size_t>(buffer)].kind; };
  for (auto& t : b.fetch) t = {0, 0};
  for (auto& t : b.store) t = {0, 0};
  auto prefetch = [&](size_t k, int64_t s) {
    const plan::StreamedSlice& sl = bp.prefetched[k];
    ir::ValueId in = body.inputs[static_cast<size_t>(sl.io)];
    const ir::ValueId stacked = eq.inputs[static_cast<size_t>(sl.io)];
    b.fetch[k][s % 2] = copy(buffer_address(f, sl.buffers[s % 2]), kind_of(sl.buffers[s % 2]),
                             slice(stacked, in, index_of(s)), program_->type(stacked).kind, body.type(in).size_bytes(),
                             false);
  };
  if (p.length > 0)
    for (size_t k = 0; k < bp.prefetched.size(); ++k) prefetch(k, 0);
  for (int64_t s = 0; s < p.length; ++s) {
    const int64_t i = index_of(s);
    // Carries alternate between the scratch buffer and the output so the last step lands in the output.
    const bool to_output = (p.length - 1 - s) % 2 == 0;
    for (size_t j = 0; j < nc; ++j) {
      step.inputs[j] = b.carry[j];
      step.outputs[j] = to_output ? b.out_carry[j] : b.scratch[j];
    }
    for (size_t j = 0; j < nx; ++j) step.inputs[nc + j] = slice(eq.inputs[nc + j], body.inputs[nc + j], i);
    for (size_t j = nc; j < body.outputs.size(); ++j) step.outputs[j] = slice(eq.outputs[j], body.outputs[j], i);
    for (size_t k = 0; k < bp.prefetched.size(); ++k) {
      f.copies->wait(b.fetch[k][s % 2]);
      step.inputs[static_cast<size_t>(bp.prefetched[k].external)] = buffer_address(f, bp.prefetched[k].buffers[s % 2]);
      if (s + 1 < p.length) prefetch(k, s + 1);  // the next slice comes in while this step computes
    }
    for (size_t k = 0; k < bp.postponed.size(); ++k) {
      if (b.store[k][s % 2]) f.copies->wait(b.store[k][s % 2]);  // the buffer's last copy out
      step.outputs[static_cast<size_t>(bp.postponed[k].external)] = buffer_address(f, bp.postponed[k].buffers[s % 2]);
    }
    bodies_[e]->execute(step, *b.state);
    for (size_t k = 0; k < bp.postponed.size(); ++k) {
      const plan::StreamedSlice& sl = bp.postponed[k];
      ir::ValueId out = body.outputs[static_cast<size_t>(sl.io)];
      const ir::ValueId stacked = eq.outputs[static_cast<size_t>(sl.io)];
      b.store[k][s % 2] = copy(slice(stacked, out, i), program_->type(stacked).kind, buffer_address(f, sl.buffers[s % 2]),
                               kind_of(sl.buffers[s % 2]), body.type(out).size_bytes(), true);
    }
    for (size_t j = 0; j < nc; ++j) b.carry[j] = step.outputs[j];
  }
  for (auto& t : b.store)
    for (uint64_t ticket : t)
      if (ticket) f.copies->wait(ticket);
  if (p.length == 0)
    for (size_t j = 0; j < nc; ++j) {
      size_t bytes = static_cast<size_t>(program_->type(eq.outputs[j]).size_bytes());
      if (bytes) backend_->copy(b.out_carry[j], b.carry[j], bytes, f.stream);
    }
}

void Executable::start_copy(size_t e, const Frame& f, State& st) const {
  const ir::Program& p = *program_;
  const ir::Equation& eq = p.equations[e];
  ir::ValueId src = eq.inputs[0], dst = eq.outputs[0];
  MemoryKind from = p.type(src).kind, to = p.type(dst).kind;
  st.tickets[static_cast<size_t>(dst)] =
      enqueue_transfer(f, address(f, dst), to, address(f, src), from, p.type(dst).size_bytes(), nullptr);
}

void Executable::start_collective(size_t e, const Frame& f, State& st) const {
  const ir::Program& p = *program_;
  const ir::Equation& eq = p.equations[e];
  const ExchangeOf x = exchange_of(p, eq);
  const ir::ValueId started = eq.outputs[0];
  const uint64_t ticket = exchanges_->start(x.kind, address(f, eq.inputs[0]), address(f, started), x.count, x.dtype,
                                            x.what, f.stream);
  count_sent(*f.stats, x);
  st.tickets[static_cast<size_t>(started)] = ticket;
  st.exchange[static_cast<size_t>(started)] = x.what;
  if (f.timeline) st.started[static_cast<size_t>(started)] = now_seconds();
}

void Executable::finish_collective(size_t e, const Frame& f, State& st) const {
  const ir::Program& p = *program_;
  const ir::Equation& eq = p.equations[e];
  const size_t started = static_cast<size_t>(eq.inputs[0]);
  const double begin = f.timeline ? now_seconds() : 0;
  exchanges_->wait(st.tickets[started], f.stream);
  if (address(f, eq.outputs[0]) != address(f, eq.inputs[0]))
    throw Error(ErrorCode::internal, "memory plan: a collective's result is not where its start wrote");
  if (f.timeline) {
    // The exchange on its lane, and the time the compute lane waited for it (what was not hidden).
    const std::string name = fmt::format("{} {}", st.exchange[started], ir::to_string(p.type(eq.inputs[1])));
    const double end = now_seconds();
    f.timeline->collective(name, p.type(eq.inputs[1]).size_bytes(), st.started[started], end);
    f.timeline->compute("wait " + name, begin, end);
  }
}

void Executable::execute(const Frame& f, State& st) const {
  const ir::Program& p = *program_;
  const plan::MemoryPlan& plan = *plan_;
  auto take = [&](int b, bool acquire) {
    const plan::Buffer& buf = plan.buffers[static_cast<size_t>(b)];
    if (buf.body_of >= 0) return;  // a body region: the body takes its own buffers inside it
    int64_t offset = f.origin[plan::kind_index(buf.kind)] + buf.offset;
    if (acquire) f.arenas->acquire(buf.kind, offset, buf.size);
    else f.arenas->release(buf.kind, offset, buf.size);
  };
  for (size_t e = 0; e < p.equations.size(); ++e) {
    const ir::Equation& eq = p.equations[e];
    if (plan.skip[e]) continue;  // a copy the enclosing scan runner streams
    for (int b : plan.acquire_before[e]) take(b, true);
    double begin = f.timeline ? now_seconds() : 0;
    if (eq.prim == ir::op::copy_start) {
      start_copy(e, f, st);
    } else if (async_collective(eq)) {
      if (eq.prim == ir::op::collective_done) finish_collective(e, f, st);
      else start_collective(e, f, st);
    } else if (eq.prim == ir::op::copy_done) {
      f.copies->wait(st.tickets[static_cast<size_t>(eq.inputs[0])]);
      if (address(f, eq.outputs[0]) != address(f, eq.inputs[0]))
        throw Error(ErrorCode::internal, "memory plan: a copy's result is not where its copy_start wrote");
    } else if (bodies_[e]) {
      if (eq.prim == Primitive::scan) run_scan(e, f, st);
      else if (eq.prim == Primitive::while_loop) run_while(e, f, st);
      else run_call(e, f, st);
    } else {
      for (size_t i = 0; i < eq.inputs.size(); ++i) st.in[i] = {address(f, eq.inputs[i]), &p.type(eq.inputs[i])};
      for (size_t i = 0; i < eq.outputs.size(); ++i) st.out[i] = {address(f, eq.outputs[i]), &p.type(eq.outputs[i])};
      Workspace workspace(nullptr, 0, prepared_[e].get());
      if (int w = plan.workspace[e]; w >= 0)
        workspace = Workspace(buffer_address(f, w), plan.buffers[static_cast<size_t>(w)].size, prepared_[e].get());
      kernels_[e](eq, std::span<const ConstView>(st.in.data(), eq.inputs.size()),
                  std::span<const MutView>(st.out.data(), eq.outputs.size()), workspace, f.stream);
      if (eq.prim == Primitive::device_put)
        count_transfer(f, p.type(eq.inputs[0]).kind, p.type(eq.outputs[0]).kind, p.type(eq.outputs[0]).size_bytes());
      else if (eq.prim == Primitive::psum || eq.prim == Primitive::all_gather || eq.prim == Primitive::psum_scatter)
        count_sent(*f.stats, exchange_of(p, eq));
    }
    if (f.timeline && eq.prim != ir::op::copy_start && eq.prim != ir::op::copy_done && !async_collective(eq))
      f.timeline->compute(slice_name(eq, p), begin, now_seconds());
    for (int b : plan.release_after[e]) take(b, false);
    // MPI moves a started exchange's data only inside its calls: a look between kernels keeps it
    // going while the kernels run.
    if (processes::in_flight() > 0) processes::progress();
  }
}

std::array<int64_t, kNumKinds> Executable::check_arguments(const std::vector<Array>& args) const {
  const ir::Program& p = *program_;
  if (args.size() != p.inputs.size())
    throw Error(ErrorCode::invalid_argument,
                fmt::format("{} takes {} argument(s), got {}", p.name, p.inputs.size(), args.size()));
  std::array<int64_t, kNumKinds> held{};
  for (size_t i = 0; i < args.size(); ++i) {
    const ir::Type& want = p.type(p.inputs[i]);
    const Array& a = args[i];
    if (a.is_deleted())
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("argument {} of {} was donated to an earlier call; its buffer belongs to that call's output",
                              i, p.name));
    // Where the plan keeps an argument elsewhere than it was traced (carried state), or an array is
    // carried state another plan kept elsewhere, the call moves it: either side's traced kind serves.
    const MemoryKind input_traced = i < options_.traced_kinds.size() ? options_.traced_kinds[i] : want.kind;
    const bool kind_ok = a.defined() && (a.memory_kind() == want.kind || a.memory_kind() == input_traced ||
                                         a.storage()->traced_kind == input_traced);
    if (!a.defined() || a.dtype() != want.dtype || a.shape() != want.shape || !kind_ok) {
      std::string got = a.defined() ? ir::to_string(ir::Type{a.dtype(), a.shape(), a.memory_kind()}) : "an empty Array";
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("argument {} of {} must be {}, got {}", i, p.name, ir::to_string(want), got));
    }
    if (a.storage()->backend != backend_)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("argument {} of {} is an array of the {} backend, but {} runs on the {} backend "
                              "(Array::to_backend(\"{}\") copies it there)",
                              i, p.name, a.backend(), p.name, backend_->name(), backend_->name()));
    held[plan::kind_index(want.kind)] += static_cast<int64_t>(a.storage()->bytes);
  }
  // A donated buffer is consumed: no other argument of the call may read it.
  const std::vector<char>& donated = options_.donated;
  for (size_t i = 0; i < args.size() && i < donated.size(); ++i) {
    if (!donated[i]) continue;
    for (size_t j = 0; j < args.size(); ++j)
      if (j != i && args[j].storage() == args[i].storage())
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("argument {} of {} is donated, but the same buffer is also argument {}", i, p.name, j));
  }
  return held;
}

std::vector<Array> Executable::move_to_planned_kinds(const std::vector<Array>& args) const {
  const ir::Program& p = *program_;
  std::vector<Array> out = args;
  for (size_t i = 0; i < args.size(); ++i) {
    const MemoryKind want = p.type(p.inputs[i]).kind;
    if (args[i].memory_kind() == want) continue;
    // The caller's array stays as it was (a failed call loses nothing); the call runs on the copy.
    const size_t bytes = args[i].nbytes();
    auto s = detail::Storage::allocate(bytes, want, *backend_, false);
    if (bytes) {
      const Stream stream = backend_->compute_stream();
      backend_->copy(s->data, args[i].data(), bytes, stream);
      backend_->synchronize(stream);
    }
    out[i] = Array(std::move(s), args[i].dtype(), args[i].shape(), want);
  }
  return out;
}

std::unique_ptr<Executable::State> Executable::take_state() const {
  std::unique_ptr<State> st;
  {
    std::lock_guard<std::mutex> lock(cache_->mu);
    st = std::move(cache_->idle);
  }
  if (!st) {
    const ir::Program& p = *program_;
    st = make_state();
    st->arenas = std::make_unique<Arenas>(max_live_);
    st->top.inputs.resize(p.inputs.size());
    st->top.outputs.resize(p.outputs.size());
    st->owned.resize(p.outputs.size());
  }
  return st;
}

void Executable::give_back(std::unique_ptr<State>& st) const {
  st->arenas->close();
  for (auto& o : st->owned) o.reset();
  std::lock_guard<std::mutex> lock(cache_->mu);
  cache_->idle = std::move(st);
}

void Executable::allocate_outputs(const std::vector<Array>& args, State& st, Tally& tally) const {
  const ir::Program& p = *program_;
  Frame& f = st.top;
  for (size_t i = 0; i < args.size(); ++i) f.inputs[i] = args[i].data();
  for (size_t o = 0; o < p.outputs.size(); ++o) {
    const ir::Type& t = p.type(p.outputs[o]);
    int alias = plan_->output_alias.empty() ? -1 : plan_->output_alias[o];
    if (alias >= 0) {
      f.outputs[o] = const_cast<void*>(f.inputs[static_cast<size_t>(alias)]);
    } else {
      st.owned[o] = detail::Storage::allocate(static_cast<size_t>(t.size_bytes()), t.kind, *backend_, false, &tally);
      f.outputs[o] = st.owned[o]->data;
    }
  }
}

void Executable::run_top(State& st, ExecutionStats& stats, CopyEngine& copies, Timeline* timeline) const {
  const Stream stream = backend_->compute_stream();
  Frame& f = st.top;
  st.arenas->set_timeline(timeline);
  f.arenas = st.arenas.get();
  f.stats = &stats;
  f.copies = &copies;
  f.stream = stream;
  f.timeline = timeline;
  try {
    execute(f, st);
    backend_->synchronize(stream);  // the run is done when its stream is
  } catch (...) {
    // Kernels and copies in flight still use the arenas that unwinding frees.
    try {
      backend_->synchronize(stream);
    } catch (...) {  // the first error is the one to report
    }
    copies.drain();
    throw;
  }
  copies.drain();  // every copy was waited for on the stream; none may outlive the arenas
  st.arenas->set_timeline(nullptr);
}

std::vector<Array> Executable::hand_over_outputs(const std::vector<Array>& args, State& st) const {
  const ir::Program& p = *program_;
  const std::vector<char>& donated = options_.donated;
  std::vector<Array> results;
  results.reserve(p.outputs.size());
  for (size_t o = 0; o < p.outputs.size(); ++o) {
    const ir::Type& t = p.type(p.outputs[o]);
    int alias = plan_->output_alias.empty() ? -1 : plan_->output_alias[o];
    if (alias >= 0)
      st.owned[o] = detail::Storage::adopt(args[static_cast<size_t>(alias)].storage()->give_up(),
                                           static_cast<size_t>(t.size_bytes()), t.kind, *backend_);
    results.emplace_back(std::move(st.owned[o]), t.dtype, t.shape, t.kind);
    if (o < options_.traced_output_kinds.size() && options_.traced_output_kinds[o] != t.kind)
      results.back().storage()->traced_kind = options_.traced_output_kinds[o];
  }
  for (size_t i = 0; i < args.size() && i < donated.size(); ++i)
    if (donated[i] && args[i].storage()->data != nullptr) args[i].storage()->free_donated();
  return results;
}

namespace {

// The arenas' memory, from the backend's resources; given back last (after the stream and the
// copies are done with it, and after the tracker stopped), on every way out of a run.
struct ArenaMemory {
  Arenas& arenas;
  Backend& backend;
  std::array<char*, kNumKinds>& base;
  const std::array<int64_t, kNumKinds>& size;
  Tally& tally;
  void open() {
    for (size_t k = 0; k < kNumKinds; ++k)
      base[k] = static_cast<char*>(backend.memory(static_cast<MemoryKind>(k)).allocate(static_cast<size_t>(size[k]), &tally));
  }
  void close() {
    arenas.close();  // the checks first: they unpoison what ASan would otherwise see freed poisoned
    for (size_t k = 0; k < kNumKinds; ++k) {
      if (base[k] != nullptr)
        backend.memory(static_cast<MemoryKind>(k)).deallocate(base[k], static_cast<size_t>(size[k]), &tally);
      base[k] = nullptr;
    }
  }
  ~ArenaMemory() { close(); }
};

}  // namespace

// One call: check the arguments, take the bookkeeping of the last run, allocate the outputs and
// the arenas, hand the donated arguments to the call, run, measure, hand the outputs over.
std::vector<Array> Executable::run(const std::vector<Array>& caller_args, ExecutionStats& stats, CopyEngine& copies,
                                   Timeline* timeline) const {
  const std::array<int64_t, kNumKinds> held = check_arguments(caller_args);  // the argument buffers the call holds
  const bool move = std::any_of(caller_args.begin(), caller_args.end(), [&, i = size_t{0}](const Array& a) mutable {
    return a.memory_kind() != program_->type(program_->inputs[i++]).kind;
  });
  const std::vector<Array> moved = move ? move_to_planned_kinds(caller_args) : std::vector<Array>{};
  const std::vector<Array>& args = move ? moved : caller_args;
  std::unique_ptr<State> st = take_state();
  struct GiveBack {  // the state back to the cache, the arenas back to their resources
    const Executable& e;
    std::unique_ptr<State>& st;
    ~GiveBack() { e.give_back(st); }
  } give_back_state{*this, st};
  const auto start = std::chrono::steady_clock::now();
  stats = ExecutionStats{};
  Tally tally;
  ArenaMemory arena_memory{*st->arenas, *backend_, st->arena_base, plan_->arena_size, tally};
  // Each output is an allocation of its own, which its Array will own; an aliased one is written
  // straight into its donated argument's buffer.
  allocate_outputs(args, *st, tally);
  arena_memory.open();
  st->arenas->open(st->arena_base, plan_->arena_size, *backend_, options_.checked);
  // Everything the run needs is held, so nothing a caller could fix (an argument, memory) can fail
  // it any more: only now do the donated arguments belong to this call, whether or not it succeeds
  // (its first kernel may write an output over one). A failure before here leaves them intact, so a
  // step that ran out of memory can be retried with the same arrays.
  for (size_t i = 0; i < args.size() && i < options_.donated.size(); ++i) {
    if (!options_.donated[i]) continue;
    args[i].storage()->donated = true;
    // A donated argument moved where the plan keeps it: the caller's array is consumed now too.
    if (const auto& mine = caller_args[i].storage(); mine != args[i].storage()) {
      mine->donated = true;
      mine->free_donated();
    }
  }
  run_top(*st, stats, copies, timeline);
  stats.device_used_bytes = backend_->device_used_bytes();
  st->arenas->close();
  arena_memory.close();  // the outputs do not need the arena
  stats.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto dev = plan::kind_index(MemoryKind::device), pinned = plan::kind_index(MemoryKind::pinned_host),
             unpinned = plan::kind_index(MemoryKind::unpinned_host);
  stats.device_high_water_bytes = held[dev] + tally.high_water[dev];
  // The host kinds together: a run allocates all it holds when it starts, so the high-water of
  // their sum is the sum of their high-waters.
  stats.host_high_water_bytes = held[pinned] + held[unpinned] + tally.high_water[pinned] + tally.high_water[unpinned];
  return hand_over_outputs(args, *st);
}

}  // namespace ferry::runtime
