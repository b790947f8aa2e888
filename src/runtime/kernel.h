// The contract between the runtime and a backend's kernels: one function per primitive that reads
// input buffers and writes output buffers already allocated (by the runtime) with the output types.
#pragma once

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

// Kernels read parameters from `eq`. Buffers are dense row-major; bool is one byte per element.
// Outputs never alias inputs unless the runtime says so (it does not yet).
using KernelFn = void (*)(const ir::Equation& eq, std::span<const ConstView> inputs,
                          std::span<const MutView> outputs);

}  // namespace ferry::runtime
