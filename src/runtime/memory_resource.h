// Memory resources: the one place the bytes of array data come from, one resource per memory kind
// and backend (runtime/backend.h; on the CPU backend every kind is host RAM, the functions below). Array storage, the arenas of a run and its outputs
// are all allocated here, and the resource counts what it hands out: the bytes in use now and the
// most ever in use, for the process and for each run (a Tally the run passes in). These counts are
// the measurement execution_stats() reports, made where the memory is handed out, independently of
// the memory plan.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "ferry/types.h"

namespace ferry::runtime {

inline constexpr int kNumKinds = 3;
inline constexpr size_t kAllocationAlignment = 64;

// What one run allocated, per memory kind: in use now and the most at once.
struct Tally {
  std::array<int64_t, kNumKinds> live{};
  std::array<int64_t, kNumKinds> high_water{};
};

// The process's counters (for tests and bytes_in_use()).
struct ResourceCounters {
  std::array<int64_t, kNumKinds> live{};  // bytes handed out and not yet given back
  int64_t allocations = 0;                // allocations handed out (nonzero sizes)
  int64_t heap_allocations = 0;           // those made with malloc (the rest are mappings)
};

// Allocations of at least this many bytes are mapped from the system (mmap), so a run's arena
// does not stay in (and fragment) the C heap among the small outputs that callers keep. A mapping
// given back is kept for reuse by an allocation it holds with at most as much again to spare (up to
// kMappingCacheBytes and kMappingCacheEntries, the oldest unmapped first): a training loop
// allocates the same arena every step, programs compiled under different policies run in turn
// allocate arenas of similar sizes, and a fresh mapping costs a page fault per 4 KiB on first
// touch (measured: ~35 ms per 16 MiB on the reference machine, more than the kernels that then run
// on it). Cached mappings are not in use: the counts below do not include them.
inline constexpr size_t kMapThreshold = size_t{1} << 20;
inline constexpr size_t kMappingCacheBytes = size_t{2} << 30;
inline constexpr size_t kMappingCacheEntries = 32;

// A backend's memory of one kind. Every resource counts through count_allocation(), so the
// process's counters and a run's tally see every backend's bytes the same way.
class MemoryResource {
 public:
  virtual ~MemoryResource() = default;
  virtual MemoryKind kind() const = 0;
  // kAllocationAlignment-aligned (or more); zero bytes give a valid pointer that owns nothing;
  // RESOURCE_EXHAUSTED when there is no memory to give.
  virtual void* allocate(size_t bytes, Tally* tally = nullptr) = 0;
  virtual void deallocate(void* p, size_t bytes, Tally* tally = nullptr) = 0;
  // Whether the host may read and write the bytes directly.
  virtual bool host_accessible() const = 0;
};

// Adds `delta` bytes of `kind` to the process's counters and to `tally` (may be null), and counts
// one allocation when delta > 0.
void count_allocation(MemoryKind kind, int64_t delta, Tally* tally);

// Host RAM as a resource of `kind` (the functions below): the CPU backend's memory of every kind,
// and ordinary (unpinned) host memory for other backends.
MemoryResource& host_resource(MemoryKind kind);

// Unmaps every cached mapping (tests, and callers that want the memory back now).
void release_cached_mappings();

// `bytes` of `kind`, kAllocationAlignment-aligned, counted in the process's counters and in `tally`
// (may be null). Zero bytes give a valid pointer that owns nothing. RESOURCE_EXHAUSTED when the
// system has no memory to give.
void* allocate(MemoryKind kind, size_t bytes, Tally* tally = nullptr);
// Gives back what allocate() handed out, with the same kind and size.
void deallocate(MemoryKind kind, void* p, size_t bytes, Tally* tally = nullptr);

ResourceCounters resource_counters();

}  // namespace ferry::runtime
