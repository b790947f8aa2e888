// Storage: the bytes behind an Array, always from the memory resource of its kind on its backend
// (runtime/backend.h), which counts them. A Storage owns its bytes until it is destroyed, or until a compiled call takes them over
// (donation): then it is left empty and marked donated, and every Array that shares it refuses to
// be read (INVALID_ARGUMENT) instead of reading memory that now belongs to the call's output.
#pragma once

#include <optional>

#include <cstddef>
#include <memory>

#include "ferry/types.h"
#include "runtime/backend.h"
#include "runtime/memory_resource.h"

namespace ferry::detail {

struct Storage {
  void* data = nullptr;
  size_t bytes = 0;
  MemoryKind kind = MemoryKind::device;
  runtime::Backend* backend = nullptr;  // whose resource handed the bytes out
  bool donated = false;
  // Set on carried state the plan keeps in another kind than the step was traced with (host memory
  // between calls: compiler/offload_state.h): the kind the array stands for, so that passing it
  // back finds the same compiled step in jit's cache.
  std::optional<MemoryKind> traced_kind;

  Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage() {
    if (backend) backend->memory(kind).deallocate(data, bytes);
  }

  // `bytes` of `kind` from `backend`'s memory resource (never null, even for zero bytes);
  // zero-filled when `zero`. A run passes its tally so the bytes count as the run's.
  static std::shared_ptr<Storage> allocate(size_t bytes, MemoryKind kind, runtime::Backend& backend, bool zero,
                                           runtime::Tally* tally = nullptr);
  // Takes over `data` (allocated by `backend`'s resource for `kind`, `bytes` long).
  static std::shared_ptr<Storage> adopt(void* data, size_t bytes, MemoryKind kind, runtime::Backend& backend);
  bool host_accessible() const { return backend == nullptr || backend->memory(kind).host_accessible(); }

  // Hands the bytes to the caller (a donation an output reuses) and leaves this Storage empty and
  // donated.
  void* give_up() {
    void* p = data;
    data = nullptr;
    bytes = 0;
    donated = true;
    return p;
  }
  // Frees the bytes now (a donation no output reused) and leaves this Storage empty and donated.
  void free_donated() {
    if (backend) backend->memory(kind).deallocate(data, bytes);
    give_up();
  }
};

}  // namespace ferry::detail
