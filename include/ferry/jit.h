// jit: trace a C++ function into a Program, lower it for given argument types, compile and run it.
//
//   auto f = ferry::jit([](ferry::Tensor x, std::vector<ferry::Tensor> ws) { ... return loss; });
//   ferry::Lowered lowered = f.lower(x_array, w_arrays);      // or ShapeDtype specs
//   std::cout << lowered.as_text();
//   ferry::Compiled c = lowered.compile();
//   std::vector<ferry::Array> outs = c(x_array, w_arrays);
//
// Arguments and results are trees (ferry/tree.h): Tensors, vectors, maps by name, pairs, tuples and
// structs registered with FERRY_FIELDS. A struct written as a template over its leaf type is lowered
// and called with Arrays or ShapeDtypes in it (Mlp<Array>) and traced with Tensors (Mlp<Tensor>).
// A compiled call returns Results: the outputs flattened, in order (a std::vector<Array>), which
// convert to the result's structure (ferry/results.h).
//
// Calling a jit-ed function on Arrays compiles it once per argument signature and keeps the program
// (ferry/jit_cache.h); it returns the result's structure of Arrays when that has a struct or a map
// in it, and Results otherwise (flat, as calls returned before, and convertible), so code that
// indexes the results of a function returning Tensors, vectors or tuples keeps working.
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferry/array.h"
#include "ferry/jit_cache.h"
#include "ferry/options.h"
#include "ferry/results.h"
#include "ferry/tensor.h"
#include "ferry/tree.h"

namespace ferry {

// The type of an argument, for lowering without data.
struct ShapeDtype {
  Shape shape;
  DType dtype = DType::f32;
  MemoryKind kind = MemoryKind::device;
};

// Options of jit.
struct JitOptions {
  std::string name = "main";
  // Positions of the arguments (as the function takes them; a vector argument donates all its
  // arrays) whose buffers the call may reuse for its outputs, as jax.jit's donate_argnums: an output
  // of the same type whose computation no longer needs the argument is written into its buffer
  // (alias_size_in_bytes). A donated Array is consumed by the call: reading it or passing it again
  // afterwards is INVALID_ARGUMENT, and a donated buffer no output reuses is freed when the call returns.
  // Donation takes effect only once the run can no longer fail for a reason the caller could fix:
  // a call that fails before it runs (tracing or compiling it, an argument of the wrong type, memory
  // it cannot get: RESOURCE_EXHAUSTED) leaves every argument intact and usable, so the call can be
  // retried with the same arrays. Only a failure while the program runs (a ferry or device fault)
  // leaves a donated array consumed.
  std::vector<int> donate_argnums;
  // How calls on Arrays compile, and how many compiled programs (argument signatures) they keep.
  CompileOptions compile = {};
  size_t cache_capacity = 32;
};

namespace detail {
struct LoweredImpl;
struct CompiledImpl;
}  // namespace detail

class Compiled {
 public:
  explicit Compiled(std::shared_ptr<const detail::CompiledImpl> impl) : impl_(std::move(impl)) {}

  // Runs the program on trees of Arrays, in the order the traced function took them (the same
  // structures it was lowered with: INVALID_ARGUMENT names the first difference).
  template <class... Args> Results operator()(const Args&... args) const {
    std::vector<Array> flat;
    (detail::flatten(args, flat), ...);
    check_arguments(detail::tree_def(std::tie(args...)));
    return Results(run(flat), output_structure());
  }
  std::vector<Array> run(const std::vector<Array>& flat_args) const;
  // run(), also writing a Chrome/Perfetto trace of it (compute and copy lanes, live bytes per
  // memory kind) to trace_path. The program keeps the last such run for memory_html().
  std::vector<Array> run_traced(const std::vector<Array>& flat_args, const std::string& trace_path) const;
  // The program that runs, after the compiler's passes.
  std::string as_text() const;
  // The plan's memory needs, known before anything runs.
  MemoryStats memory_analysis() const;
  // memory_analysis() in words, with the largest buffers live at the device peak.
  std::string memory_report() const;
  // The plan drawn: one self-contained HTML page (no server, no network) with device and host
  // memory over the schedule as stacked live ranges coloured by what each buffer is (argument,
  // saved / offloaded / recomputed residual, workspace, output, transfer in flight), the peak and
  // the buffers live at it, the copies each way, and the last run_traced() run's timeline beside
  // the plan. Hovering a range names its buffer; clicking it lists the equations that make and
  // read it. The page's body carries the peak it drew as data-peak-bytes, which is
  // memory_analysis().peak_memory_in_bytes. Several programs on one page: ferry/memory_html.h.
  std::string memory_html() const;
  // memory_html() written to path (atomically); INVALID_ARGUMENT when it cannot be written there.
  void save_memory_html(const std::string& path) const;
  CostStats cost_analysis() const;
  // What the most recent run measured (zeros before the first run).
  ExecutionStats execution_stats() const;
  // Decisions that had no effect, in words (the Lowered program's warnings; see Lowered::warnings).
  std::vector<std::string> warnings() const;
  // The types run() takes and returns, flattened.
  std::vector<ShapeDtype> input_specs() const;
  std::vector<ShapeDtype> output_specs() const;
  // The structures of the traced function's arguments (a tuple of them) and result; null for
  // programs parsed from text.
  std::shared_ptr<const detail::TreeDef> input_structure() const;
  std::shared_ptr<const detail::TreeDef> output_structure() const;
  const detail::CompiledImpl& impl() const { return *impl_; }

 private:
  void check_arguments(const detail::TreeDef& arguments) const;
  std::shared_ptr<const detail::CompiledImpl> impl_;
};

class Lowered {
 public:
  explicit Lowered(std::shared_ptr<const detail::LoweredImpl> impl) : impl_(std::move(impl)) {}

  // The traced program as IR text; parse_program() reads it back.
  std::string as_text() const;
  Compiled compile(const CompileOptions& options = {}) const;
  // Decisions that had no effect, in words: each name a checkpoint policy saves or offloads that
  // no backward pass reads ("named 'act': not needed by the backward pass; ..."). Found while
  // differentiating; empty for parsed programs and checkpoints that are never differentiated.
  std::vector<std::string> warnings() const;
  const detail::LoweredImpl& impl() const { return *impl_; }

 private:
  std::shared_ptr<const detail::LoweredImpl> impl_;
};

// A Lowered program from IR text (as Lowered::as_text() prints it). Bad text is INVALID_ARGUMENT
// with the line and column; a program that does not verify is INVALID_ARGUMENT naming the
// equation; so is one holding the compiler's own primitives (copy_start, copy_done, fused), which a
// compiled program's text has: they are made after differentiation, by passes no input goes past.
Lowered parse_program(const std::string& text);

namespace detail {

// One trace in progress: the innermost active trace while it lives.
class TraceSession {
 public:
  explicit TraceSession(std::string name);
  ~TraceSession();
  TraceSession(const TraceSession&) = delete;
  TraceSession& operator=(const TraceSession&) = delete;

  Tensor input(const Array& a);
  Tensor input(const ShapeDtype& s);
  // A tree of Arrays or ShapeDtypes: the same structure of Tensors, one program input per leaf.
  template <class A>
    requires(!is_leaf_v<A>)
  rebind_t<A, Tensor> input(const A& tree) {
    return map_leaves<Tensor>(tree, [&](const auto& leaf) { return input(leaf); });
  }
  // Ends the trace with these outputs; `donated` marks the inputs whose buffers outputs may reuse;
  // the structures, when given, are the traced function's arguments (a tuple) and result.
  Lowered finish(const std::vector<Tensor>& outputs, std::vector<char> donated = {},
                 std::shared_ptr<const TreeDef> input_structure = nullptr,
                 std::shared_ptr<const TreeDef> output_structure = nullptr);

 private:
  std::shared_ptr<Tracer> tracer_;
};

// Per program input, whether it is donated, from donate_argnums and each argument's leaf count
// (INVALID_ARGUMENT for a position the function does not have).
std::vector<char> donated_inputs(const std::vector<int>& donate_argnums, const std::vector<size_t>& leaves);

template <class T> struct is_tensor_arg : std::bool_constant<is_tree_of<T, Tensor>> {};

// Whether a result type has a struct or a map in it (then jit-ed calls return it typed).
template <class T> constexpr bool has_names() {
  if constexpr (is_leaf_v<T>) return false;
  else if constexpr (is_map<T>::value || Record<T>) return true;
  else if constexpr (is_vector<T>::value) return has_names<typename element_of<T>::type>();
  else if constexpr (is_tuple_like<T>::value)
    return []<size_t... I>(std::index_sequence<I...>) {
      return (has_names<std::decay_t<std::tuple_element_t<I, T>>>() || ...);
    }(std::make_index_sequence<std::tuple_size_v<T>>{});
  else return false;
}

}  // namespace detail

template <class F> class Jitted {
 public:
  Jitted(F f, JitOptions options)
      : f_(std::move(f)), options_(std::move(options)), cache_(std::make_shared<detail::JitCache>(options_.cache_capacity)) {}

  // Traces f on arguments of these types (trees of Arrays or ShapeDtypes).
  template <class... Args> Lowered lower(const Args&... args) const {
    detail::TraceSession session(options_.name);
    // Braces evaluate left to right, so program inputs follow the argument order.
    std::tuple<decltype(session.input(args))...> inputs{session.input(args)...};
    auto result = std::apply(f_, inputs);
    std::vector<Tensor> outs;
    detail::flatten(result, outs);
    return session.finish(outs, detail::donated_inputs(options_.donate_argnums, {detail::leaf_count(args)...}),
                          std::make_shared<const detail::TreeDef>(detail::tree_def(std::tie(args...))),
                          std::make_shared<const detail::TreeDef>(detail::tree_def(result)));
  }

  // On Tensors (inside another trace) f is inlined into that trace. On Arrays it runs the program
  // compiled for this argument signature, tracing and compiling it on the first call; the result is
  // f's structure of Arrays when that has a struct or a map in it, else Results.
  template <class... Args> auto operator()(const Args&... args) const {
    if constexpr ((detail::is_tensor_arg<Args>::value || ...)) {
      return f_(args...);
    } else {
      Compiled c = cache_->get(detail::call_signature(args...), [&] { return lower(args...).compile(options_.compile); });
      std::vector<Array> flat;
      (detail::flatten(args, flat), ...);
      // The signature matched, so the structures are the ones c was lowered with.
      Results results(c.run(flat), c.output_structure());
      using R = std::decay_t<std::invoke_result_t<const F&, detail::rebind_t<Args, Tensor>...>>;
      using Typed = detail::rebind_t<R, Array>;
      if constexpr (!std::is_void_v<Typed> && detail::has_names<R>()) return results.template as<Typed>();
      else return results;
    }
  }

  // The cache of compiled programs (shared by copies of this jit-ed function).
  JitCacheInfo cache_info() const { return cache_->info(); }
  void clear_cache() const { cache_->clear(); }

 private:
  F f_;
  JitOptions options_;
  std::shared_ptr<detail::JitCache> cache_;
};

template <class F> Jitted<F> jit(F f, JitOptions options = {}) { return Jitted<F>(std::move(f), std::move(options)); }
// jit(f, "name"). (A template, so that jit(f, {.donate_argnums = ...}) can only mean JitOptions.)
template <class F, std::convertible_to<std::string> S> Jitted<F> jit(F f, S name) {
  return jit(std::move(f), JitOptions{.name = std::string(std::move(name))});
}

}  // namespace ferry
