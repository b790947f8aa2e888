#include "runtime/memory_resource.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>
#include <vector>
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
// address handed out, so giving one back needs no table (and no heap allocation).
std::mutex g_cache_mutex;
std::deque<std::pair<size_t, void*>> g_cache;
size_t g_cache_bytes = 0;
constexpr size_t kHeaderPage = 4096;

size_t& usable_size(void* p) { return *reinterpret_cast<size_t*>(static_cast<char*>(p) - kHeaderPage); }
void unmap(void* p, size_t usable) { munmap(static_cast<char*>(p) - kHeaderPage, usable + kHeaderPage); }

// The smallest cached mapping that holds `mapped` bytes and wastes at most as much again (so
// programs of different arena sizes, run in turn, reuse each other's touched pages), or nullptr.
void* take_cached(size_t mapped) {
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  auto best = g_cache.end();
  for (auto it = g_cache.begin(); it != g_cache.end(); ++it)
    if (it->first >= mapped && it->first / 2 <= mapped && (best == g_cache.end() || it->first < best->first)) best = it;
  if (best == g_cache.end()) return nullptr;
  void* p = best->second;
  g_cache_bytes -= best->first;
  g_cache.erase(best);
  return p;
}

void* map_fresh(size_t mapped) {
  void* base = mmap(nullptr, mapped + kHeaderPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return nullptr;
  void* p = static_cast<char*>(base) + kHeaderPage;
  usable_size(p) = mapped;
  return p;
}

void give_back_mapping(void* p) {
  const size_t mapped = usable_size(p);
  std::vector<std::pair<size_t, void*>> evicted;
  {
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    if (mapped > kMappingCacheBytes) {
      evicted.emplace_back(mapped, p);
    } else {
      g_cache.emplace_back(mapped, p);
      g_cache_bytes += mapped;
      while (g_cache_bytes > kMappingCacheBytes || g_cache.size() > kMappingCacheEntries) {
        evicted.push_back(g_cache.front());
        g_cache_bytes -= g_cache.front().first;
        g_cache.pop_front();
      }
    }
  }
  for (auto [size, q] : evicted) unmap(q, size);
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
  std::deque<std::pair<size_t, void*>> all;
  {
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    all.swap(g_cache);
    g_cache_bytes = 0;
  }
  for (auto [size, p] : all) unmap(p, size);
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
