#include "runtime/arena.h"

#include <cstdlib>

#include <fmt/format.h>

#include "ferry/error.h"
#include "runtime/copy_queue.h"

namespace ferry::runtime {

Arenas::Arenas(const std::array<int64_t, kNumKinds>& sizes) : size_(sizes) {
  for (size_t k = 0; k < kNumKinds; ++k) {
    size_t bytes = static_cast<size_t>(sizes[k] > 0 ? sizes[k] : 64);
    bytes = (bytes + 63) / 64 * 64;
    base_[k] = static_cast<char*>(std::aligned_alloc(64, bytes));
    if (base_[k] == nullptr) {
      for (size_t j = 0; j < k; ++j) std::free(base_[j]);
      throw Error(ErrorCode::resource_exhausted,
                  fmt::format("could not allocate the {} arena of {} bytes", memory_kind_name(static_cast<MemoryKind>(k)), sizes[k]));
    }
  }
}

Arenas::~Arenas() {
  for (char* b : base_) std::free(b);
}

void Arenas::acquire(MemoryKind k, int64_t offset, int64_t bytes) {
  if (bytes <= 0) return;
  size_t i = static_cast<size_t>(k);
  int64_t end = offset + bytes;
  if (offset < 0 || end > size_[i])
    throw Error(ErrorCode::internal, fmt::format("memory plan: buffer [{}, {}) lies outside the {} arena of {} bytes",
                                                 offset, end, memory_kind_name(k), size_[i]));
  auto& live = live_[i];
  auto next = live.lower_bound(offset);
  if (next != live.end() && next->first < end)
    throw Error(ErrorCode::internal, fmt::format("memory plan: buffer [{}, {}) of {} overlaps live buffer [{}, {})", offset,
                                                 end, memory_kind_name(k), next->first, next->second));
  if (next != live.begin() && std::prev(next)->second > offset)
    throw Error(ErrorCode::internal, fmt::format("memory plan: buffer [{}, {}) of {} overlaps live buffer [{}, {})", offset,
                                                 end, memory_kind_name(k), std::prev(next)->first, std::prev(next)->second));
  live.emplace(offset, end);
  if (end > high_water_[i]) high_water_[i] = end;
  live_bytes_[i] += bytes;
  if (timeline_) timeline_->live_bytes(k, live_bytes_[i], now_seconds());
}

void Arenas::release(MemoryKind k, int64_t offset, int64_t bytes) {
  if (bytes <= 0) return;
  auto& live = live_[static_cast<size_t>(k)];
  auto it = live.find(offset);
  if (it == live.end() || it->second != offset + bytes)
    throw Error(ErrorCode::internal, fmt::format("memory plan: releasing [{}, {}) of {} that is not live", offset,
                                                 offset + bytes, memory_kind_name(k)));
  live.erase(it);
  live_bytes_[static_cast<size_t>(k)] -= bytes;
  if (timeline_) timeline_->live_bytes(k, live_bytes_[static_cast<size_t>(k)], now_seconds());
}

}  // namespace ferry::runtime
