#include "runtime/arena.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "ferry/error.h"
#include "runtime/copy_queue.h"

#if defined(__SANITIZE_ADDRESS__)
#define FERRY_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FERRY_ASAN 1
#endif
#endif
#if defined(FERRY_ASAN)
#include <sanitizer/asan_interface.h>
#define FERRY_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define FERRY_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define FERRY_POISON(p, n) ((void)(p), (void)(n))
#define FERRY_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace ferry::runtime {

Arenas::Arenas(size_t max_live) {
  for (auto& live : live_) live.reserve(max_live);
}

void Arenas::open(const std::array<char*, kNumKinds>& bases, const std::array<int64_t, kNumKinds>& sizes, Backend& backend,
                  bool checked) {
  close();
  backend_ = &backend;
  checked_ = checked;
  base_ = bases;
  size_ = sizes;
  open_ = true;
  for (size_t k = 0; k < kNumKinds; ++k) {
    live_[k].clear();
    live_bytes_[k] = 0;
    host_[k] = backend.memory(static_cast<MemoryKind>(k)).host_accessible();
    const auto bytes = static_cast<size_t>(sizes[k]);
    if (!bytes) continue;
    if (checked_) backend.fill(base_[k], static_cast<MemoryKind>(k), kPoisonByte, bytes, backend.compute_stream());
    if (host_[k]) FERRY_POISON(base_[k], bytes);
  }
}

void Arenas::close() {
  if (!open_) return;
  for (size_t k = 0; k < kNumKinds; ++k) {
    const auto bytes = static_cast<size_t>(size_[k]);
    if (bytes && host_[k]) FERRY_UNPOISON(base_[k], bytes);
    base_[k] = nullptr;
  }
  open_ = false;
}

void Arenas::acquire(MemoryKind k, int64_t offset, int64_t bytes) {
  if (bytes <= 0) return;
  size_t i = static_cast<size_t>(k);
  int64_t end = offset + bytes;
  if (offset < 0 || end > size_[i])
    throw Error(ErrorCode::internal, fmt::format("memory plan: buffer [{}, {}) lies outside the {} arena of {} bytes",
                                                 offset, end, memory_kind_name(k), size_[i]));
  auto& live = live_[i];
  auto next = std::lower_bound(live.begin(), live.end(), std::pair{offset, int64_t{0}});
  if (next != live.end() && next->first < end)
    throw Error(ErrorCode::internal, fmt::format("memory plan: buffer [{}, {}) of {} overlaps live buffer [{}, {})", offset,
                                                 end, memory_kind_name(k), next->first, next->second));
  if (next != live.begin() && std::prev(next)->second > offset)
    throw Error(ErrorCode::internal, fmt::format("memory plan: buffer [{}, {}) of {} overlaps live buffer [{}, {})", offset,
                                                 end, memory_kind_name(k), std::prev(next)->first, std::prev(next)->second));
  if (live.size() == live.capacity())
    throw Error(ErrorCode::internal, fmt::format("memory plan: more than {} buffers live at once", live.capacity()));
  live.insert(next, {offset, end});
  if (host_[i]) FERRY_UNPOISON(base_[i] + offset, static_cast<size_t>(bytes));
  live_bytes_[i] += bytes;
  if (timeline_) timeline_->live_bytes(k, live_bytes_[i], now_seconds());
}

void Arenas::release(MemoryKind k, int64_t offset, int64_t bytes) {
  if (bytes <= 0) return;
  size_t i = static_cast<size_t>(k);
  auto& live = live_[i];
  auto it = std::lower_bound(live.begin(), live.end(), std::pair{offset, int64_t{0}});
  if (it == live.end() || it->first != offset || it->second != offset + bytes)
    throw Error(ErrorCode::internal, fmt::format("memory plan: releasing [{}, {}) of {} that is not live", offset,
                                                 offset + bytes, memory_kind_name(k)));
  live.erase(it);
  if (checked_) backend_->fill(base_[i] + offset, k, kPoisonByte, static_cast<size_t>(bytes), backend_->compute_stream());
  if (host_[i]) FERRY_POISON(base_[i] + offset, static_cast<size_t>(bytes));
  live_bytes_[i] -= bytes;
  if (timeline_) timeline_->live_bytes(k, live_bytes_[i], now_seconds());
}

}  // namespace ferry::runtime
