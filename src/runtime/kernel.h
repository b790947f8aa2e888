// The contract between the runtime and a backend's kernels: one function per primitive that reads
// input buffers and writes output buffers already allocated (by the runtime) with the output types,
// in the order of the backend's compute stream. runtime/backend.h is the rest of a backend.
#pragma once

#include <cstdint>
#include <span>

#include "ir/program.h"

namespace ferry::runtime {

struct ConstView {
  const void* data = nullptr;
  const ir::Type* type = nullptr;
  template <class T> const T* as() const { return static_cast<const T*>(data); }
};

struct MutView {
  void* data = nullptr;
  const ir::Type* type = nullptr;
  template <class T> T* as() const { return static_cast<T*>(data); }
};

// Scratch memory the memory plan gives one kernel call (a workspace buffer in the arena, live only
// while the kernel runs): exactly the bytes the backend declared for the equation's types. A kernel
// takes pieces of it in a fixed order; each piece starts 64-byte aligned. Taking more than was
// declared is INTERNAL: the kernel's declaration is wrong.
class Workspace {
 public:
  Workspace() = default;
  Workspace(void* data, int64_t bytes, const void* prepared = nullptr)
      : data_(static_cast<char*>(data)), size_(bytes), prepared_(prepared) {}

  // The bytes a piece of `bytes` bytes uses.
  static constexpr int64_t piece(int64_t bytes) { return (bytes + 63) / 64 * 64; }

  template <class T> T* take(int64_t count) {
    const int64_t bytes = piece(count * static_cast<int64_t>(sizeof(T)));
    if (used_ + bytes > size_) overdrawn(bytes);
    T* p = reinterpret_cast<T*>(data_ + used_);
    used_ += bytes;
    return p;
  }
  int64_t size() const { return size_; }
  // What the backend prepared for this equation when the executable was made (Backend::prepare:
  // the fused kernel's recipe), or null where the kernel is called on its own (kernel tests).
  template <class T> const T* prepared() const { return static_cast<const T*>(prepared_); }

 private:
  [[noreturn]] void overdrawn(int64_t bytes) const;
  char* data_ = nullptr;
  int64_t size_ = 0, used_ = 0;
  const void* prepared_ = nullptr;
};

// A kernel's workspace declaration: one add<T>(count) per take<T>(count) the kernel will make.
struct WorkspaceSize {
  int64_t bytes = 0;
  template <class T> void add(int64_t count) { bytes += Workspace::piece(count * static_cast<int64_t>(sizeof(T))); }
};

// A backend's ordered queue of device work (a CUDA stream), handed to every kernel: a kernel
// enqueues its work there and may return before it is done; the runtime orders copies and host
// reads against it. Null on the CPU backend, whose kernels finish before they return.
struct Stream {
  void* handle = nullptr;
};

// Kernels read parameters from `eq`. Buffers are dense row-major; bool is one byte per element.
// An output shares its buffer with an input only where the memory plan writes in place (the
// inputs the op table names, ir/ops.def); kernels allocate nothing: scratch memory
// comes from `workspace`, per-dimension bookkeeping lives on the stack (or in kernel arguments).
using KernelFn = void (*)(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                          Workspace& workspace, Stream stream);

// The workspace bytes the kernel of `eq` needs for these operand and result types.
using WorkspaceSizeFn = int64_t (*)(const ir::Equation& eq, std::span<const ir::Type* const> inputs,
                                    std::span<const ir::Type* const> outputs);

}  // namespace ferry::runtime
