// Nothing outside the plan: this binary replaces the C allocation functions (and so operator new,
// which calls malloc) with versions that count every heap allocation while armed. During a run of a
// bf16 1024x1024 matmul, an f32 reduction over a leading axis and a scanned model with offloaded
// residuals, the only allocations are those the memory resources count (the arena and each
// output's buffer), the handles of the Arrays the call returns, and oneDNN's bookkeeping of each
// matrix product it runs; and what the resources counted reaches exactly the planned peak. The
// resources' count is what execution_stats() reports.
//
// oneDNN builds a small map of a call's arguments on every call (a few hundred bytes, freed before
// the call returns; its public API has no way to keep one). The test tracks every malloc of the
// run: what outlives it must be the handles, and what was freed within it must be small, a bounded
// amount per product ferry handed to oneDNN (onednn_gemm.h's gemm_calls). Aligned buffers (where a
// library would keep packing space of its own) must come from the memory resources alone.
// OpenBLAS (f64 products, and f32 below AVX-512) runs single-threaded, as ferry always loads it
// (openblas.h): its threaded gemm would malloc a table of thread jobs (512 KiB) on every call.
// ferry's own kernels allocate nothing.
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "ferry/ferry.h"
#include "runtime/cpu/dot_path.h"
#include "runtime/cpu/onednn_gemm.h"
#include "runtime/memory_resource.h"
#include "training.h"

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)  // sanitizers own malloc
#define FERRY_HEAP_HOOK 1

extern "C" {
void* __libc_malloc(size_t);
void __libc_free(void*);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
}

namespace {
// While armed: every allocation, by the function that made it. The memory resources allocate with
// aligned_alloc (runtime/memory_resource.cpp); the handles and oneDNN's per-call bookkeeping with
// malloc (operator new); memalign and posix_memalign would be buffers some library keeps for itself.
std::atomic<bool> g_armed{false};
std::atomic<int64_t> g_aligned{0}, g_plain{0}, g_other_aligned{0};
// The plain allocations of the armed window, so that their frees are matched: an open-addressed
// table of pointer and size (inserts and removals under one spin lock; the run's threads are few).
constexpr size_t kSlots = 1 << 14;
struct Slot {
  void* p;
  size_t bytes;
};
Slot g_slots[kSlots];
std::atomic_flag g_lock = ATOMIC_FLAG_INIT;
std::atomic<bool> g_table_full{false};
int64_t g_freed = 0, g_freed_bytes = 0, g_largest_freed = 0;

struct Locked {
  Locked() {
    while (g_lock.test_and_set(std::memory_order_acquire)) {
    }
  }
  ~Locked() { g_lock.clear(std::memory_order_release); }
};

size_t slot_of(void* p) { return (reinterpret_cast<uintptr_t>(p) >> 4) * 0x9E3779B97F4A7C15ull >> 50; }

void remember(void* p, size_t bytes) {
  Locked lock;
  for (size_t i = slot_of(p), n = 0; n < kSlots; i = (i + 1) % kSlots, ++n)
    if (g_slots[i].p == nullptr) {
      g_slots[i] = {p, bytes};
      return;
    }
  g_table_full = true;
}

void forget(void* p) {
  Locked lock;
  for (size_t i = slot_of(p), n = 0; n < kSlots && g_slots[i].p != nullptr; i = (i + 1) % kSlots, ++n)
    if (g_slots[i].p == p) {
      ++g_freed;
      g_freed_bytes += static_cast<int64_t>(g_slots[i].bytes);
      g_largest_freed = std::max(g_largest_freed, static_cast<int64_t>(g_slots[i].bytes));
      // Deleting from linear probing: re-insert the rest of the cluster.
      g_slots[i].p = nullptr;
      for (size_t j = (i + 1) % kSlots; g_slots[j].p != nullptr; j = (j + 1) % kSlots) {
        const Slot moved = g_slots[j];
        g_slots[j].p = nullptr;
        size_t k = slot_of(moved.p);
        while (g_slots[k].p != nullptr) k = (k + 1) % kSlots;
        g_slots[k] = moved;
      }
      return;
    }
}

void* plain(void* p, size_t bytes) {
  if (p != nullptr && g_armed.load(std::memory_order_relaxed)) {
    g_plain.fetch_add(1, std::memory_order_relaxed);
    remember(p, bytes);
  }
  return p;
}
void* counted(std::atomic<int64_t>& count, void* p) {
  if (p != nullptr && g_armed.load(std::memory_order_relaxed)) count.fetch_add(1, std::memory_order_relaxed);
  return p;
}

// Starts counting afresh.
void arm() {
  {
    Locked lock;
    for (Slot& slot : g_slots) slot.p = nullptr;
    g_freed = g_freed_bytes = g_largest_freed = 0;
  }
  g_aligned = g_plain = g_other_aligned = 0;
  g_table_full = false;
  g_armed = true;
}

// The plain allocations of the window not freed, less those at `keep`.
int64_t plain_live(const std::vector<const void*>& keep) {
  Locked lock;
  int64_t n = 0;
  for (const Slot& slot : g_slots)
    if (slot.p != nullptr && std::find(keep.begin(), keep.end(), slot.p) == keep.end()) ++n;
  return n;
}
}  // namespace

extern "C" void* malloc(size_t n) { return plain(__libc_malloc(n), n); }
extern "C" void* calloc(size_t n, size_t size) { return plain(__libc_calloc(n, size), n * size); }
extern "C" void* realloc(void* p, size_t n) {
  if (p != nullptr && g_armed.load(std::memory_order_relaxed)) forget(p);
  return plain(__libc_realloc(p, n), n);
}
extern "C" void* aligned_alloc(size_t alignment, size_t n) { return counted(g_aligned, __libc_memalign(alignment, n)); }
extern "C" void* memalign(size_t alignment, size_t n) { return counted(g_other_aligned, __libc_memalign(alignment, n)); }
extern "C" int posix_memalign(void** out, size_t alignment, size_t n) {
  void* p = counted(g_other_aligned, __libc_memalign(alignment, n));
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
extern "C" void free(void* p) {
  if (p != nullptr && g_armed.load(std::memory_order_relaxed)) forget(p);
  __libc_free(p);
}
#endif

namespace fy = ferry;
namespace fm = ferry::models;

namespace {

struct Counted {
  int64_t aligned = 0;         // aligned_alloc: the memory resources' way to the heap
  int64_t other_aligned = 0;   // memalign, posix_memalign
  int64_t plain_live = 0;      // malloc-family allocations of the run still live after it (outputs' buffers aside)
  int64_t plain_freed = 0;     // malloc-family allocations of the run freed before it returned
  int64_t freed_bytes = 0, largest_freed = 0;
  bool table_full = false;
  int64_t resources = 0;       // the allocations the memory resources made (and counted)
  int64_t resource_heap = 0;   // those of them made on the heap (the rest are mappings)
  int64_t products = 0;        // matrix products oneDNN ran
};

// Runs `c` once to warm up (the run's bookkeeping is made on the first call), then once counted.
Counted run_counted(const fy::Compiled& c, const std::vector<fy::Array>& args, std::vector<fy::Array>& out) {
  c.run(args);
  Counted n;
#if defined(FERRY_HEAP_HOOK)
  const fy::runtime::ResourceCounters before = fy::runtime::resource_counters();
  const int64_t products_before = fy::runtime::cpu::gemm_calls();
  arm();
  out = c.run(args);
  g_armed = false;
  const fy::runtime::ResourceCounters after = fy::runtime::resource_counters();
  n.products = fy::runtime::cpu::gemm_calls() - products_before;
  std::vector<const void*> buffers;
  for (const fy::Array& a : out) buffers.push_back(a.data());
  n.aligned = g_aligned;
  n.other_aligned = g_other_aligned;
  n.plain_live = plain_live(buffers);
  n.plain_freed = g_freed;
  n.freed_bytes = g_freed_bytes;
  n.largest_freed = g_largest_freed;
  n.table_full = g_table_full;
  n.resources = after.allocations - before.allocations;
  n.resource_heap = after.heap_allocations - before.heap_allocations;
#endif
  return n;
}

// The most bytes of heap bookkeeping one product may allocate and free (oneDNN's argument map:
// about 300 bytes in 6 allocations in version 2.6).
constexpr int64_t kMaxBookkeepingBytes = 4096;

// The handles a call returns: the vector of Arrays, and per output its buffer's owner and, unless
// it is a scalar, its shape.
int64_t handle_allocations(const std::vector<fy::Array>& out) {
  int64_t n = 1;
  for (const fy::Array& a : out) n += 1 + (a.rank() > 0 ? 1 : 0);
  return n;
}

// The resources hand out exactly the arena (one block per kind that has temporaries) and each
// output's buffer; the high-water they counted, plus the arguments, is the planned peak.
void expect_only_planned_memory(const fy::Compiled& c, const std::vector<fy::Array>& args) {
#if !defined(FERRY_HEAP_HOOK)
  GTEST_SKIP() << "sanitizer builds replace malloc themselves";
#else
  std::vector<fy::Array> out;
  Counted n = run_counted(c, args, out);
  fy::MemoryStats m = c.memory_analysis();
  fy::ExecutionStats e = c.execution_stats();
  int64_t arenas = (m.temp_size_in_bytes > 0) + (m.host_temp_size_in_bytes > 0);
  int64_t nonempty_outputs = 0;
  for (const fy::Array& a : out) nonempty_outputs += a.nbytes() > 0;
  EXPECT_EQ(n.resources, arenas + nonempty_outputs) << c.memory_report();
  ASSERT_FALSE(n.table_full);
  EXPECT_EQ(n.aligned, n.resource_heap) << "aligned heap memory outside the memory resources";
  EXPECT_EQ(n.other_aligned, 0) << "a library kept aligned heap memory of its own during the run";
  EXPECT_EQ(n.plain_live, handle_allocations(out)) << "heap allocations outside the plan outlive the run";
  // What was allocated and freed during the run: oneDNN's argument map per product (a few hundred
  // bytes), and nothing of a buffer's size.
  EXPECT_LE(n.largest_freed, kMaxBookkeepingBytes) << n.plain_freed << " transient allocations";
  EXPECT_LE(n.freed_bytes, kMaxBookkeepingBytes * std::max<int64_t>(1, n.products))
      << n.plain_freed << " transient allocations, " << n.products << " oneDNN products";
  EXPECT_EQ(e.device_high_water_bytes, m.peak_memory_in_bytes) << c.memory_report();
  EXPECT_EQ(e.host_high_water_bytes, m.host_peak_memory_in_bytes) << c.memory_report();
#endif
}

TEST(HeapHook, Bf16MatmulKeepsItsScratchInTheWorkspace) {
  auto f = fy::jit([](fy::Tensor a, fy::Tensor b) { return fy::matmul(a, b); });
  fy::Array a = fy::ones({1024, 1024}, fy::DType::bf16), b = fy::full({1024, 1024}, 0.5, fy::DType::bf16);
  fy::Compiled c = f.lower(a, b).compile();
  // oneDNN multiplies bf16 as it is where the processor has the bf16 instructions (its scratch is
  // the whole arena); on narrower paths both operands and the result are widened to f32 (12 MiB,
  // and oneDNN's f32 scratch on the avx512 path).
  const int64_t temp = c.memory_analysis().temp_size_in_bytes;
  const fy::runtime::cpu::DotPath path = fy::runtime::cpu::chosen_dot_path();
  if (path != fy::runtime::cpu::DotPath::avx512_bf16 && path != fy::runtime::cpu::DotPath::amx)
    EXPECT_GE(temp, 3 * 1024 * 1024 * 4) << c.memory_report();
  else
    EXPECT_LT(temp, 3 * 1024 * 1024 * 4) << "bf16 operands were widened: " << c.memory_report();
  expect_only_planned_memory(c, {a, b});
  EXPECT_EQ(c.run({a, b})[0].to_vector<float>()[0], 512.0f);
}

TEST(HeapHook, ReductionOverALeadingAxis) {
  auto f = fy::jit([](fy::Tensor x) { return fy::sum(x, {0}); });
  fy::Array x = fy::ones({4, 1 << 20});
  fy::Compiled c = f.lower(x).compile();
  // f32 accumulates in its result: no temporaries at all.
  EXPECT_EQ(c.memory_analysis().temp_size_in_bytes, 0) << c.memory_report();
  expect_only_planned_memory(c, {x});
  // f16 accumulates in floats, one per result element, in the workspace.
  fy::Array h = fy::ones({4, 1 << 20}, fy::DType::f16);
  fy::Compiled ch = f.lower(h).compile();
  EXPECT_EQ(ch.memory_analysis().temp_size_in_bytes, (1 << 20) * 4) << ch.memory_report();
  expect_only_planned_memory(ch, {h});
}

// A run gives its mapped buffers back to the mapping cache (runtime/memory_resource.h), which
// must not allocate from the heap to keep them, whatever it holds and wherever its entries lie. It
// was a deque, which took a new block of 32 entries from the heap whenever its last one filled: a
// run then left one allocation behind, and ReductionOverALeadingAxis failed now and then,
// depending on what other tests had left in the cache. Here mappings the run cannot reuse come
// and go between runs, so that the run's own arena is given back at every position of a block.
TEST(HeapHook, MappingsGivenBackNeverAllocate) {
  // f16 sums accumulate in a 1 MiB workspace of floats: a mapped arena (kMapThreshold), taken at
  // the start of the run and given back at its end.
  auto f = fy::jit([](fy::Tensor x) { return fy::sum(x, {0}); });
  fy::Array x = fy::ones({4, 1 << 18}, fy::DType::f16);
  fy::Compiled c = f.lower(x).compile();
  ASSERT_EQ(c.memory_analysis().temp_size_in_bytes, (1 << 18) * 4) << c.memory_report();
  fy::runtime::release_cached_mappings();
  constexpr size_t kOther = size_t{16} << 20;  // never touched; over twice the arena: never taken for it
  for (int i = 0; i < 70; ++i) {
    SCOPED_TRACE(fmt::format("after {} other mappings came and went", i));
    fy::runtime::deallocate(fy::MemoryKind::device, fy::runtime::allocate(fy::MemoryKind::device, kOther), kOther);
    expect_only_planned_memory(c, {x});
    if (HasFailure()) break;
  }
  fy::runtime::release_cached_mappings();
}

TEST(HeapHook, ScannedModelWithOffloadedResiduals) {
#if !defined(FERRY_HEAP_HOOK)
  GTEST_SKIP() << "sanitizer builds replace malloc themselves";
#endif
  fm::ScanMlpConfig cfg{.batch = 32, .width = 32, .hidden = 64, .layers = 4};
  fy::Compiled c = fm::compile_scan_mlp_grad(cfg, fm::benchmark_policies(fm::scan_mlp_names()).back().policy);
  ASSERT_GT(c.memory_analysis().host_temp_size_in_bytes, 0) << c.memory_report();
  std::vector<fy::Array> args{fm::scan_mlp_input(cfg, 1)};
  for (const fy::Array& w : fm::scan_mlp_params(cfg, 1)) args.push_back(w);
  expect_only_planned_memory(c, args);
  EXPECT_GT(c.execution_stats().bytes_to_host, 0);
}

}  // namespace
