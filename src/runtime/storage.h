// Storage: the bytes behind an Array. Heap storage by default; the runtime can wrap memory it owns
// (a slice of an arena) with a release callback instead.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "ferry/types.h"

namespace ferry::detail {

struct Storage {
  void* data = nullptr;
  size_t bytes = 0;
  MemoryKind kind = MemoryKind::device;
  std::function<void(void*)> release;  // frees `data`

  Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage() {
    if (release) release(data);
  }

  // 64-byte aligned heap bytes (never null, even for zero bytes); zero-filled when `zero`.
  static std::shared_ptr<Storage> heap(size_t bytes, MemoryKind kind, bool zero);
};

}  // namespace ferry::detail
