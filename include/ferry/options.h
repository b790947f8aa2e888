// How a program compiles (CompileOptions) and what ferry reports about a compiled program: its
// plan's memory (MemoryStats), its cost by the cost model (CostStats) and what a run measured
// (ExecutionStats). Their own header, so the compiler and the runtime see these plain structs
// without the tracing API; ferry/jit.h includes it, so users see them there as before.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ferry {

// The cost model's rates (each > 0): the estimated step time (CostStats::estimated_seconds) and the
// automatic planner's choices are made with them. The defaults are this project's reference CPU
// machine (docs/COST_MODEL.md); `ferry calibrate` measures them on this machine (ferry/calibrate.h),
// and a backend has its own (a GPU's nominal rates).
struct Rates {
  double compute_flops_per_s = 1e11;         // matrix-product (dot_general) FLOPs
  double memory_bytes_per_s = 2e10;          // bytes an equation reads and writes
  double link_bandwidth_bytes_per_s = 25e9;  // host <-> device copies
  double vector_flops_per_s = 1e10;          // the other FLOPs: elementwise arithmetic, random bits, ...
  double transcendentals_per_s = 1e9;        // evaluations of exp, log, tanh, erf, pow, ...
  double dot_product_seconds = 1e-6;         // fixed cost of each matrix product (a batch of B costs B)
  // Between processes (ferry/distributed.h): the bytes a process sends per second in a collective
  // (calibrate() measures an all-reduce between the launch's processes).
  double interconnect_bytes_per_s = 5e9;
  bool operator==(const Rates&) const = default;
};

struct CompileOptions {
  // Bytes; 0: no limit on the "cpu" backend, and on a GPU backend the GPU's free memory when
  // compiling.
  int64_t device_memory_limit = 0;
  // Where the program runs: "cpu", or "cuda" where the build has it (ferry::built_backends()).
  std::string backend = "cpu";
  // With a device_memory_limit: the automatic planner decides, for every value the backward pass
  // reads (not only under policies::automatic checkpoints), whether to keep it, offload it or (for
  // a value an automatic checkpoint recomputes) recompute it, so that the plan fits the limit at
  // the lowest estimated step time. Decisions of explicit checkpoint policies are kept.
  bool fit_to_limit = false;
  // The cost model's rates; unset: the backend's (on "cpu", the reference machine's: Rates'
  // defaults). calibrated_options() sets this machine's measured ones.
  std::optional<Rates> rates;
  // Checked mode, for tests: every arena byte outside a live buffer holds a poison pattern (0xFF
  // bytes, a NaN in every float dtype) from the start of a run and again from the moment its buffer
  // is released, so a kernel that reads a buffer before it is written or after the plan released
  // it computes with NaNs instead of silently with stale values. Slower: each release is a fill.
  bool checked = false;
  // Fusion (after the planner's decisions, before scheduling): chains of elementwise work,
  // broadcasts and row reductions run as one loop each, without materializing their
  // intermediates. Off only to compare against the unfused program (and on backends without a
  // fused kernel).
  bool fuse = true;
};

// The backends this build has: "cpu", and "cuda" where it was built with the CUDA toolkit.
std::vector<std::string> built_backends();
// Whether `backend` can run on this machine; when not, `why` (may be null) says why (no GPU).
bool backend_available(const std::string& backend, std::string* why = nullptr);

// What the compiled plan needs, per memory kind, before anything runs (JAX's field names). Device
// fields have no prefix; host fields (pinned_host and unpinned_host together) are prefixed host_.
// They add up: peak = argument + output + temp - alias, for the device and for the host.
struct MemoryStats {
  // The caller's arguments (their exact bytes), held for the whole call.
  int64_t argument_size_in_bytes = 0;
  // The outputs (exact bytes): each is an allocation of its own, which the returned Array owns.
  int64_t output_size_in_bytes = 0;
  // The outputs written into donated arguments' buffers (jit's donate_argnums): counted in both
  // argument and output, held once.
  int64_t alias_size_in_bytes = 0;
  // The arena of the run: temporaries, kernel workspaces (scratch a kernel needs for its shapes)
  // and the alignment padding between buffers. Allocated when a call starts, released when it returns.
  int64_t temp_size_in_bytes = 0;
  int64_t host_argument_size_in_bytes = 0;
  int64_t host_output_size_in_bytes = 0;
  int64_t host_alias_size_in_bytes = 0;
  int64_t host_temp_size_in_bytes = 0;
  // The most memory a call holds at once: argument + output + temp - alias (the arena and the
  // outputs are allocated when the call starts, and the arguments are held throughout).
  int64_t peak_memory_in_bytes = 0;
  int64_t host_peak_memory_in_bytes = 0;
};

// The compiled program's work by the cost model (scan bodies counted once per step).
struct CostStats {
  double flops = 0;
  double recompute_flops = 0;     // of the equations a backward pass recomputes (marked !remat)
  int64_t bytes_to_host = 0;      // copies planned from the device to host kinds
  int64_t bytes_to_device = 0;    // and back
  // The estimated time of one call by the cost model with overlap (compiler/step_time.h): each
  // equation at the compile options' FLOP and memory rates, plus the part of each host copy that
  // the compute in its window does not hide (copies share one link).
  double estimated_seconds = 0;
  double exposed_copy_seconds = 0;  // of estimated_seconds: waiting for copies
  // Collectives (ferry/distributed.h): the bytes this process sends in them (a ring's: 2(N-1)/N of
  // an all-reduce's operand, (N-1)/N of an all-gather's result or a reduce-scatter's operand), and
  // of estimated_seconds the time spent waiting for them (what the compute between a collective's
  // start and done does not hide).
  int64_t bytes_exchanged = 0;
  double exposed_collective_seconds = 0;
};

// What the last run measured, independently of the plan: each memory kind's resource counts the
// bytes it hands out to the run (arenas and outputs) as they are allocated and given back, and the
// run adds the exact bytes of the argument buffers it holds. Nothing else holds array data during a
// run (tests/heap/heap_hook_test.cpp counts every heap allocation to check that).
struct ExecutionStats {
  int64_t device_high_water_bytes = 0;  // arguments + the most the device resource handed the run at once
  int64_t host_high_water_bytes = 0;    // the same for pinned_host and unpinned_host together
  int64_t bytes_to_host = 0;    // copied device -> host kinds
  int64_t bytes_to_device = 0;  // copied host kinds -> device
  double wall_seconds = 0;
  // Bytes this process sent to the others in the run's collectives, counted as each exchange
  // started (a collective in a loop counts every time it runs), at a ring's bytes for the payload
  // it handed to the transport: an all-reduce 2(N-1)/N of its operand, an all-gather and a
  // reduce-scatter (N-1)/N of their whole array. cost_analysis().bytes_exchanged plans the same.
  int64_t bytes_exchanged = 0;
  // On a GPU backend, the device's own view (cudaMemGetInfo: total - free) at the end of the run,
  // while its arena and outputs are still allocated; it includes the CUDA context and any other
  // process's memory, so it is an upper bound of the run's. 0 on the CPU backend.
  int64_t device_used_bytes = 0;
};

}  // namespace ferry
