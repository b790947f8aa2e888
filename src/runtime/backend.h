// The seam between the runtime and a machine: everything the executable, Arrays and the compile
// driver need from a backend, and nothing more. A backend provides
//   - a kernel table: one KernelFn per primitive, nullptr where it has none (compile reports
//     UNIMPLEMENTED naming the primitive and the backend, before anything runs);
//   - a memory resource per memory kind, which counts what it hands out (runtime/memory_resource.h);
//   - a copy engine: asynchronous copies between memory kinds, each with a ticket to wait on;
//   - exchanges with the other processes (ferry/distributed.h) for the asynchronous collectives
//     (optional: a backend without them refuses a program that has them when compiling);
//   - a compute stream, handed to every kernel, and copies and fills ordered on it;
//   - device facts: its memory, and default rates for the cost model.
// The CPU backend (runtime/cpu/backend.cpp) is one implementation; the CUDA backend
// (runtime/cuda/, built where CMake finds the CUDA toolkit) is another. Adding a backend is adding
// files: an implementation of this class and one line in backend.cpp's registry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/options.h"
#include "ferry/primitive.h"
#include "ferry/types.h"
#include "runtime/kernel.h"
#include "runtime/memory_resource.h"

namespace ferry::runtime {

// Copies between memory kinds that run beside the compute stream. A copy starts after the work the
// compute stream holds when it is enqueued (so it reads what the kernels before it wrote), and
// wait(ticket) orders the compute stream's later work after that copy and every earlier one (so
// the kernels after a copy_done read what it wrote). On the CPU both are host-side: the copy runs
// on a thread, and wait blocks the caller.
class CopyEngine {
 public:
  // Called around each copy (for timelines), with steady-clock seconds; a backend that cannot
  // time its copies on the host calls it with the time the copy was enqueued and waited for.
  using Observer = std::function<void(uint64_t ticket, size_t bytes, double begin, double end)>;

  virtual ~CopyEngine() = default;
  virtual uint64_t enqueue(void* dst, MemoryKind to, const void* src, MemoryKind from, size_t bytes,
                           Observer observer = nullptr) = 0;
  virtual void wait(uint64_t ticket) = 0;
  // Blocks the host until every copy enqueued so far has finished: a run that stops early (an
  // error) must not free memory a copy still reads or writes.
  virtual void drain() = 0;
};

// The exchanges of the asynchronous collectives (compiler/lower_collectives.h), and the transport
// the collectives' kernels run on. start() begins one after the work the compute stream holds
// (so it reads what the kernels before it wrote) and returns a ticket; wait(ticket) orders the
// compute stream's later work after that exchange. A process that stops taking part makes the
// others fail with UNAVAILABLE naming the exchange (`what`) within the process group's timeout,
// never hang. The CPU backend's are the process group's MPI exchanges (runtime/process_group.h):
// wait blocks the caller. The CUDA backend's are NCCL's, on a stream of their own.
class Exchanges {
 public:
  enum class Kind { all_reduce_sum, all_gather, reduce_scatter_sum };
  virtual ~Exchanges() = default;
  // `count`: the elements of `dtype` in x (all_reduce_sum, all_gather; y may be x for the sum) or
  // in y (reduce_scatter_sum: x holds process_count() such blocks). `what` outlives the exchange.
  virtual uint64_t start(Kind kind, const void* x, void* y, int64_t count, DType dtype, const char* what,
                         Stream stream) = 0;
  virtual void wait(uint64_t ticket, Stream stream) = 0;
};

// The bytes this process sends in one exchange of `count` elements (as Exchanges::start takes it)
// among n processes, as a ring sends them: an all-reduce 2(n-1)/n of them, an all-gather and a
// reduce-scatter n-1 blocks. What a run counts (ExecutionStats::bytes_exchanged).
inline int64_t ring_bytes(Exchanges::Kind kind, int64_t count, DType dtype, int64_t n) {
  const int64_t bytes = count * static_cast<int64_t>(dtype_size(dtype));
  return kind == Exchanges::Kind::all_reduce_sum ? 2 * (n - 1) * bytes / n : (n - 1) * bytes;
}

// What the cost model and the device limit need to know about the machine.
struct DeviceFacts {
  std::string description;       // "CPU" or the GPU's name
  int64_t memory_bytes = 0;      // the device memory there is; 0 where device memory is host RAM
  int64_t free_memory_bytes = 0; // free now (the default device limit where memory_bytes > 0)
  // The cost model's rates where CompileOptions gives none.
  Rates rates;
  // Copies from or to unpinned_host memory block the host (and so hide behind no compute).
  bool unpinned_copies_synchronous = false;
  // The share of compute throughput an asynchronous copy takes while it runs: 0 where copy engines
  // of their own move the bytes (a GPU's DMA), 1/threads where a host thread does (the CPU
  // backend's copy queue runs memcpy on the cores the kernels use).
  double copy_compute_share = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;

  // The kernel of p; nullptr where this backend has none.
  virtual KernelFn kernel(Primitive p) const = 0;
  // The workspace p's kernel needs for given types; nullptr where it never needs any.
  virtual WorkspaceSizeFn workspace_size(Primitive p) const = 0;

  virtual MemoryResource& memory(MemoryKind kind) = 0;
  // Each compiled program has its own engine (its copies are ordered among themselves only).
  virtual std::unique_ptr<CopyEngine> make_copy_engine() = 0;
  // The exchanges of this process with the others (one for the process); nullptr where this
  // backend has none, with `why` (what compiling a program with collectives reports).
  virtual Exchanges* exchanges(std::string* why) {
    if (why) *why = "this backend has no collectives";
    return nullptr;
  }
  virtual Stream compute_stream() = 0;
  // The host waits until the stream's work is done (errors the device reported surface here).
  virtual void synchronize(Stream stream) = 0;
  // On the stream, ordered with its kernels: `bytes` from src to dst, which may be of any memory
  // kinds of this backend or ordinary host memory (Array's way in and out).
  virtual void copy(void* dst, const void* src, size_t bytes, Stream stream) = 0;
  // On the stream: `bytes` of dst (of this backend's `kind`) set to `byte` (checked mode's poison).
  virtual void fill(void* dst, MemoryKind kind, unsigned char byte, size_t bytes, Stream stream) = 0;

  virtual DeviceFacts facts() const = 0;
  // Per-equation kernel state made once, when an executable is made, and handed to every call of
  // its kernel (Workspace::prepared): compile work off the call path. nullptr: none (the default).
  virtual std::shared_ptr<const void> prepare(const ir::Equation& eq) const { return nullptr; }
  // The device's own count of the memory in use now (total - free, CUDA's cudaMemGetInfo: every
  // process and the driver's context included); 0 where device memory is host RAM.
  virtual int64_t device_used_bytes() { return 0; }
};

// The backend named `name`: "cpu", or "cuda" where this build has it. UNIMPLEMENTED names the
// backends this build has, or says why the named one cannot run here (no GPU).
Backend& backend(std::string_view name);
// The backends this build has, "cpu" first (whether or not a device is present for the others).
std::vector<std::string> built_backends();
// Whether `name` can run here; when not, `why` (may be null) says why.
bool backend_available(std::string_view name, std::string* why = nullptr);

// The CPU backend (always built).
Backend& cpu_backend();

}  // namespace ferry::runtime
