// jit's non-template half: trace sessions, Lowered and Compiled.
#include <fstream>

#include <fmt/format.h>

#include "driver/agreement.h"
#include "driver/compile.h"
#include "compiler/cost_analysis.h"
#include "compiler/memory_analysis.h"
#include "ferry/error.h"
#include "ferry/jit.h"
#include "driver/traced_kind.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "prims/verify.h"
#include "driver/jit_counters.h"
#include "driver/memory_page.h"
#include "driver/lowered.h"
#include "trace/tracer.h"
#include "transforms/unused_names.h"
#include "ir/type.h"

namespace ferry {
namespace detail {

TraceSession::TraceSession(std::string name) : tracer_(std::make_shared<Tracer>(std::move(name))) {
  push_tracer(tracer_);
  count_trace();
}

TraceSession::~TraceSession() { pop_tracer(); }

Tensor TraceSession::input(const Array& a) {
  if (!a.defined()) throw Error(ErrorCode::invalid_argument, "lower: an argument is an empty Array");
  return tracer_->add_input(ir::Type{a.dtype(), a.shape(), driver::traced_kind(a)});
}

Tensor TraceSession::input(const ShapeDtype& s) {
  ir::check_dtype(s.dtype, "lower: an argument's ShapeDtype");
  ir::check_memory_kind(s.kind, "lower: an argument's ShapeDtype");
  return tracer_->add_input(ir::Type{s.dtype, s.shape, s.kind});
}

Lowered TraceSession::finish(const std::vector<Tensor>& outputs, std::vector<char> donated,
                             std::shared_ptr<const TreeDef> input_structure, std::shared_ptr<const TreeDef> output_structure) {
  auto impl = std::make_shared<LoweredImpl>();
  impl->program = tracer_->finish(outputs);
  impl->donated = std::move(donated);
  impl->input_structure = std::move(input_structure);
  impl->output_structure = std::move(output_structure);
  for (const transforms::NamedDecision& d : transforms::unneeded_names(tracer_->named_decisions()))
    impl->warnings.push_back(transforms::unneeded_warning(d));
  return Lowered(std::move(impl));
}

std::vector<char> donated_inputs(const std::vector<int>& donate_argnums, const std::vector<size_t>& leaves) {
  std::vector<size_t> first(leaves.size() + 1, 0);
  for (size_t i = 0; i < leaves.size(); ++i) first[i + 1] = first[i] + leaves[i];
  std::vector<char> donated(first.back(), 0);
  for (int a : donate_argnums) {
    if (a < 0 || static_cast<size_t>(a) >= leaves.size())
      throw Error(ErrorCode::invalid_argument, fmt::format("donate_argnums: {} is not an argument position of a function "
                                                           "called with {} argument(s)",
                                                           a, leaves.size()));
    for (size_t i = first[static_cast<size_t>(a)]; i < first[static_cast<size_t>(a) + 1]; ++i) donated[i] = 1;
  }
  if (donate_argnums.empty()) donated.clear();
  return donated;
}

}  // namespace detail

std::string Lowered::as_text() const { return ir::print(*impl_->program); }

std::vector<std::string> Lowered::warnings() const { return impl_->warnings; }

Compiled Lowered::compile(const CompileOptions& options) const {
  driver::check_options(options);  // before counting: a refused compile is not one
  detail::count_compile();
  driver::CompiledProgram c = driver::compile(impl_->program, impl_->donated, options);
  auto impl = std::make_shared<detail::CompiledImpl>(c.program, c.plan, c.executable, c.options, c.target);
  impl->warnings = impl_->warnings;
  impl->collectives = driver::has_collectives(*impl->program);
  impl->input_structure = impl_->input_structure;
  impl->output_structure = impl_->output_structure;
  return Compiled(std::move(impl));
}

namespace {
Lowered lowered_from_text(const std::string& text, bool compiler_ops) {
  auto program = ir::parse(text, {.compiler_ops = compiler_ops});
  prims::verify(*program);
  auto impl = std::make_shared<detail::LoweredImpl>();
  impl->program = std::move(program);
  return Lowered(std::move(impl));
}
}  // namespace

Lowered parse_program(const std::string& text) { return lowered_from_text(text, false); }

Lowered detail::parse_program_with_compiler_ops(const std::string& text) { return lowered_from_text(text, true); }

void detail::CompiledImpl::check_agreement() const {
  if (!collectives) return;
  std::lock_guard<std::mutex> lock(agreement_mutex);
  if (agreed) return;
  driver::check_processes_agree(*program);
  agreed = true;
}

std::vector<Array> Compiled::run(const std::vector<Array>& flat_args) const {
  impl_->check_agreement();
  ExecutionStats stats;
  std::vector<Array> out = impl_->executable->run(flat_args, stats, *impl_->copies);
  std::lock_guard<std::mutex> lock(impl_->stats_mutex);
  impl_->last_stats = stats;
  return out;
}

std::vector<Array> Compiled::run_traced(const std::vector<Array>& flat_args, const std::string& trace_path) const {
  impl_->check_agreement();
  runtime::Timeline timeline;
  ExecutionStats stats;
  std::vector<Array> out = impl_->executable->run(flat_args, stats, *impl_->copies, &timeline);
  std::string trace = timeline.to_json();
  std::ofstream file(trace_path, std::ios::binary);
  file << trace;
  if (!file) throw Error(ErrorCode::invalid_argument, fmt::format("cannot write the trace to {}", trace_path));
  std::lock_guard<std::mutex> lock(impl_->stats_mutex);
  impl_->last_stats = stats;
  impl_->last_trace = std::move(trace);
  return out;
}

CostStats Compiled::cost_analysis() const { return compiler::cost_stats(*impl_->program, impl_->target); }

MemoryStats Compiled::memory_analysis() const { return compiler::memory_stats(*impl_->program, *impl_->plan); }

std::string Compiled::memory_report() const { return compiler::memory_report(*impl_->program, *impl_->plan); }

std::string Compiled::memory_html() const {
  driver::PagePlan page;
  page.title = impl_->program->name;
  page.program = impl_->program.get();
  page.plan = impl_->plan.get();
  {
    std::lock_guard<std::mutex> lock(impl_->stats_mutex);
    page.trace_json = impl_->last_trace;
  }
  return driver::memory_page({page}, {.title = fmt::format("ferry memory plan: {}", impl_->program->name),
                                      .device_memory_limit = impl_->options.device_memory_limit});
}

void Compiled::save_memory_html(const std::string& path) const { driver::save_memory_page(memory_html(), path); }

std::vector<std::string> Compiled::warnings() const { return impl_->warnings; }

ExecutionStats Compiled::execution_stats() const {
  std::lock_guard<std::mutex> lock(impl_->stats_mutex);
  return impl_->last_stats;
}

std::string Compiled::as_text() const { return ir::print(*impl_->program); }

namespace {
std::vector<ShapeDtype> specs(const ir::Program& p, const std::vector<ir::ValueId>& ids) {
  std::vector<ShapeDtype> out;
  for (ir::ValueId v : ids) out.push_back({p.type(v).shape, p.type(v).dtype, p.type(v).kind});
  return out;
}
}  // namespace

std::shared_ptr<const detail::TreeDef> Compiled::input_structure() const { return impl_->input_structure; }
std::shared_ptr<const detail::TreeDef> Compiled::output_structure() const { return impl_->output_structure; }

void Compiled::check_arguments(const detail::TreeDef& arguments) const {
  const detail::TreeDef* want = impl_->input_structure.get();
  // Parsed programs record no structure (run() checks the flat count and types either way). A
  // difference in structure is named as one, before run() would count the flattened arrays: "main
  // takes 3 argument(s), got 4" says nothing of the {w, w, w} given where {w, w} was lowered.
  if (!want || arguments == *want) return;
  if (arguments.children.size() != want->children.size())
    throw Error(ErrorCode::invalid_argument, fmt::format("compiled call: the function takes {1} argument(s), got {0}",
                                                         arguments.children.size(), want->children.size()));
  for (size_t i = 0; i < want->children.size(); ++i)
    if (!(arguments.children[i] == want->children[i]))
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("compiled call: argument {} has the structure {} but the function was lowered with {}", i,
                              arguments.children[i].to_string(), want->children[i].to_string()));
  throw Error(ErrorCode::invalid_argument, fmt::format("compiled call: the arguments have the structure {} but the "
                                                       "function was lowered with {}",
                                                       arguments.to_string(), want->to_string()));
}

std::vector<ShapeDtype> Compiled::input_specs() const { return specs(*impl_->program, impl_->program->inputs); }
std::vector<ShapeDtype> Compiled::output_specs() const { return specs(*impl_->program, impl_->program->outputs); }

}  // namespace ferry
