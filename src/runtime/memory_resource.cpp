#include "runtime/memory_resource.h"

#include <algorithm>
#include <atomic>
#include <array>
#include <mutex>
#include <cstdlib>

#include <sys/mman.h>

#include <fmt/format.h>

#include "ferry/array.h"
#include "ferry/error.h"

namespace ferry::runtime {
namespace {

std::array<std::atomic<int64_t>, kNumKinds> g_live{};
std::atomic<int64_t> g_allocations{0}, g_heap_allocations{0};

size_t page_rounded(size_t bytes) {
  const size_t page = 4096;
  return (bytes + page - 1) / page * page;
}

// Mappings given back, kept for reuse: (usable size, address), oldest first. A mapping's usable
// size (a reused one may be larger than its request) is written in a page of its own before the
// address handed out, so giving one back needs no table. The cache is a fixed array, not a
// container that grows: giving an arena back at the end of a run must not allocate from the heap
// (tests/heap counts every allocation of a run; a deque's new node block was one, now and then).
struct CachedMapping {
  size_t usable;
  void* p;
};
class MappingCache {
 public:
  // Takes the smallest mapping that holds `mapped` bytes and wastes at most as much again (so
  // programs of different arena sizes, run in turn, reuse each other's touched pages), or nullptr.
  void* take(size_t mapped) {
    size_t best = n_;
    for (size_t i = 0; i < n_; ++i)
      if (at_[i].usable >= mapped && at_[i].usable / 2 <= mapped && (best == n_ || at_[i].usable < at_[best].usable)) best = i;
    if (best == n_) return nullptr;
    void* p = at_[best].p;
    erase(best);
    return p;
  }
  // Keeps `m` as the newest; returns in `evicted` (the oldest first) what no longer fits, `m`
  // itself if it alone is beyond the cache's bytes. Returns how many were evicted.
  size_t keep(CachedMapping m, CachedMapping (&evicted)[kMappingCacheEntries + 1]) {
    if (m.usable > kMappingCacheBytes) {
      evicted[0] = m;
      return 1;
    }
    at_[n_++] = m;
    bytes_ += m.usable;
    size_t out = 0;
    while (bytes_ > kMappingCacheBytes || n_ > kMappingCacheEntries) {
      evicted[out++] = at_[0];
      erase(0);
    }
    return out;
  }
  size_t take_all(CachedMapping (&all)[kMappingCacheEntries + 1]) {
    const size_t n = n_;
    std::copy(at_.begin(), at_.begin() + n, all);
    n_ = 0;
    bytes_ = 0;
    return n;
  }

 private:
  void erase(size_t i) {
    bytes_ -= at_[i].usable;
    std::copy(at_.begin() + i + 1, at_.begin() + n_, at_.begin() + i);
    --n_;
  }
  std::array<CachedMapping, kMappingCacheEntries + 1> at_{};  // one more: the newest, before eviction
  size_t n_ = 0, bytes_ = 0;
};

std::mutex g_cache_mutex;
MappingCache g_cache;
constexpr size_t kHeaderPage = 4096;

size_t& usable_size(void* p) { return *reinterpret_cast<size_t*>(static_cast<char*>(p) - kHeaderPage); }
void unmap(void* p, size_t usable) { munmap(static_cast<char*>(p) - kHeaderPage, usable + kHeaderPage); }

void* take_cached(size_t mapped) {
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  return g_cache.take(mapped);
}

void* map_fresh(size_t mapped) {
  void* base = mmap(nullptr, mapped + kHeaderPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return nullptr;
  void* p = static_cast<char*>(base) + kHeaderPage;
  usable_size(p) = mapped;
  return p;
}

void give_back_mapping(void* p) {
  CachedMapping evicted[kMappingCacheEntries + 1];
  size_t n = 0;
  {
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    n = g_cache.keep({usable_size(p), p}, evicted);
  }
  for (size_t i = 0; i < n; ++i) unmap(evicted[i].p, evicted[i].usable);
}

// What a zero-byte allocation points at: valid, aligned, owned by nobody.
alignas(kAllocationAlignment) char g_empty[kAllocationAlignment];

size_t index_of(MemoryKind kind) {
  auto i = static_cast<size_t>(kind);
  if (i >= kNumKinds) throw Error(ErrorCode::invalid_argument, fmt::format("unknown memory kind #{}", i));
  return i;
}

void count(size_t k, int64_t delta, Tally* tally) {
  g_live[k].fetch_add(delta, std::memory_order_relaxed);
  if (tally == nullptr) return;
  tally->live[k] += delta;
  if (tally->live[k] > tally->high_water[k]) tally->high_water[k] = tally->live[k];
}

class HostResource final : public MemoryResource {
 public:
  explicit HostResource(MemoryKind kind) : kind_(kind) {}
  MemoryKind kind() const override { return kind_; }
  void* allocate(size_t bytes, Tally* tally) override { return runtime::allocate(kind_, bytes, tally); }
  void deallocate(void* p, size_t bytes, Tally* tally) override { runtime::deallocate(kind_, p, bytes, tally); }
  bool host_accessible() const override { return true; }

 private:
  MemoryKind kind_;
};

}  // namespace

void count_allocation(MemoryKind kind, int64_t delta, Tally* tally) {
  if (delta > 0) g_allocations.fetch_add(1, std::memory_order_relaxed);
  count(index_of(kind), delta, tally);
}

MemoryResource& host_resource(MemoryKind kind) {
  // Never destroyed: Arrays in static objects give their bytes back during exit.
  static HostResource* const resources[kNumKinds] = {new HostResource(MemoryKind::device),
                                                     new HostResource(MemoryKind::pinned_host),
                                                     new HostResource(MemoryKind::unpinned_host)};
  return *resources[index_of(kind)];
}

void* allocate(MemoryKind kind, size_t bytes, Tally* tally) {
  size_t k = index_of(kind);
  if (bytes == 0) return g_empty;
  void* p = nullptr;
  if (bytes >= kMapThreshold) {
    size_t mapped = page_rounded(bytes);
    p = mapped >= bytes ? take_cached(mapped) : nullptr;
    if (p == nullptr && mapped >= bytes) p = map_fresh(mapped);
  } else {
    size_t rounded = (bytes + kAllocationAlignment - 1) / kAllocationAlignment * kAllocationAlignment;
    p = std::aligned_alloc(kAllocationAlignment, rounded);
    if (p) g_heap_allocations.fetch_add(1, std::memory_order_relaxed);
  }
  if (p == nullptr)
    throw Error(ErrorCode::resource_exhausted,
                fmt::format("could not allocate {} bytes of {} memory", bytes, memory_kind_name(kind)));
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  count(k, static_cast<int64_t>(bytes), tally);
  return p;
}

void deallocate(MemoryKind kind, void* p, size_t bytes, Tally* tally) {
  size_t k = index_of(kind);
  if (p == nullptr || p == g_empty) return;
  if (bytes >= kMapThreshold) give_back_mapping(p);
  else std::free(p);
  count(k, -static_cast<int64_t>(bytes), tally);
}

void release_cached_mappings() {
  CachedMapping all[kMappingCacheEntries + 1];
  size_t n = 0;
  {
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    n = g_cache.take_all(all);
  }
  for (size_t i = 0; i < n; ++i) unmap(all[i].p, all[i].usable);
}

ResourceCounters resource_counters() {
  ResourceCounters c;
  for (size_t k = 0; k < kNumKinds; ++k) c.live[k] = g_live[k].load(std::memory_order_relaxed);
  c.allocations = g_allocations.load(std::memory_order_relaxed);
  c.heap_allocations = g_heap_allocations.load(std::memory_order_relaxed);
  return c;
}

}  // namespace ferry::runtime

namespace ferry {

int64_t bytes_in_use(MemoryKind kind) {
  auto k = static_cast<size_t>(kind);
  if (k >= runtime::kNumKinds) throw Error(ErrorCode::invalid_argument, fmt::format("bytes_in_use: unknown memory kind #{}", k));
  return runtime::resource_counters().live[k];
}

}  // namespace ferry
