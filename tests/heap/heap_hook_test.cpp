// Nothing outside the plan: this binary replaces the C allocation functions (and so operator new,
// which calls malloc) with versions that count every heap allocation while armed. During a run of a
// bf16 1024x1024 matmul, an f32 reduction over a leading axis and a scanned model with offloaded
// residuals, the only allocations are those the memory resources count (the arena and each
// output's buffer) and the handles of the Arrays the call returns; and what the resources counted
// reaches exactly the planned peak. The resources' count is what execution_stats() reports.
//
// OpenBLAS runs single-threaded here: its threaded gemm mallocs a table of thread jobs (512 KiB,
// whatever the shapes) on every call, BLAS bookkeeping that ferry cannot plan (README: "How each
// figure is obtained"). ferry's own kernels allocate nothing.
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>

#include "ferry/ferry.h"
#include "runtime/memory_resource.h"
#include "training.h"

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)  // sanitizers own malloc
#define FERRY_HEAP_HOOK 1

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void openblas_set_num_threads(int);
}

namespace {
std::atomic<bool> g_armed{false};
std::atomic<int64_t> g_allocations{0};

void note() {
  if (g_armed.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

extern "C" void* malloc(size_t n) {
  note();
  return __libc_malloc(n);
}
extern "C" void* calloc(size_t n, size_t size) {
  note();
  return __libc_calloc(n, size);
}
extern "C" void* realloc(void* p, size_t n) {
  note();
  return __libc_realloc(p, n);
}
extern "C" void* aligned_alloc(size_t alignment, size_t n) {
  note();
  return __libc_memalign(alignment, n);
}
extern "C" void* memalign(size_t alignment, size_t n) {
  note();
  return __libc_memalign(alignment, n);
}
extern "C" int posix_memalign(void** out, size_t alignment, size_t n) {
  note();
  void* p = __libc_memalign(alignment, n);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
#endif

namespace fy = ferry;
namespace fm = ferry::models;

namespace {

struct Counted {
  int64_t heap = 0;            // every heap allocation during the run
  int64_t resources = 0;       // the allocations the memory resources made (and counted)
  int64_t resource_heap = 0;   // those of them made on the heap (the rest are mappings)
};

// Runs `c` once to warm up (the run's bookkeeping is made on the first call), then once counted.
Counted run_counted(const fy::Compiled& c, const std::vector<fy::Array>& args, std::vector<fy::Array>& out) {
  c.run(args);
  Counted n;
#if defined(FERRY_HEAP_HOOK)
  const fy::runtime::ResourceCounters before = fy::runtime::resource_counters();
  g_allocations = 0;
  g_armed = true;
  out = c.run(args);
  g_armed = false;
  const fy::runtime::ResourceCounters after = fy::runtime::resource_counters();
  n.heap = g_allocations;
  n.resources = after.allocations - before.allocations;
  n.resource_heap = after.heap_allocations - before.heap_allocations;
#endif
  return n;
}

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
  openblas_set_num_threads(1);
  std::vector<fy::Array> out;
  Counted n = run_counted(c, args, out);
  fy::MemoryStats m = c.memory_analysis();
  fy::ExecutionStats e = c.execution_stats();
  int64_t arenas = (m.temp_size_in_bytes > 0) + (m.host_temp_size_in_bytes > 0);
  int64_t nonempty_outputs = 0;
  for (const fy::Array& a : out) nonempty_outputs += a.nbytes() > 0;
  EXPECT_EQ(n.resources, arenas + nonempty_outputs) << c.memory_report();
  EXPECT_EQ(n.heap - n.resource_heap, handle_allocations(out)) << "heap allocations outside the memory resources";
  EXPECT_EQ(e.device_high_water_bytes, m.peak_memory_in_bytes) << c.memory_report();
  EXPECT_EQ(e.host_high_water_bytes, m.host_peak_memory_in_bytes) << c.memory_report();
#endif
}

TEST(HeapHook, Bf16MatmulWidensInItsWorkspace) {
  auto f = fy::jit([](fy::Tensor a, fy::Tensor b) { return fy::matmul(a, b); });
  fy::Array a = fy::ones({1024, 1024}, fy::DType::bf16), b = fy::full({1024, 1024}, 0.5, fy::DType::bf16);
  fy::Compiled c = f.lower(a, b).compile();
  // Both operands and the result widened to f32: 12 MiB of workspace, all of the arena.
  EXPECT_EQ(c.memory_analysis().temp_size_in_bytes, 3 * 1024 * 1024 * 4) << c.memory_report();
  expect_only_planned_memory(c, {a, b});
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
