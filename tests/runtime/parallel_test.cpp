// The CPU kernels' thread pool (runtime/cpu/parallel.h): ranges cover [0, n) disjointly in pieces
// of at least `grain`, small n runs on the caller, nested calls finish, exceptions reach the caller,
// idle work is done by threads that wait, and the kernels that split their work give the same bytes
// with 1 thread as with several.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/cpu/onednn_gemm.h"
#include "runtime/cpu/parallel.h"
#include "runtime/kernel_test_util.h"

namespace ferry::kernel_test {
namespace {

namespace cpu = runtime::cpu;

// Restores the pool's size when a test that changed it ends.
class ThreadCount {
 public:
  explicit ThreadCount(int threads) : before_(cpu::num_threads()) { cpu::set_num_threads(threads); }
  ~ThreadCount() { cpu::set_num_threads(before_); }

 private:
  int before_;
};

std::vector<std::pair<int64_t, int64_t>> ranges_of(int64_t n, int64_t grain) {
  std::mutex m;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  cpu::parallel_for(n, grain, [&](int64_t b, int64_t e) {
    std::lock_guard lock(m);
    ranges.emplace_back(b, e);
  });
  std::sort(ranges.begin(), ranges.end());
  return ranges;
}

TEST(ParallelFor, RangesCoverDisjointlyAndRespectTheGrain) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadCount tc(threads);
    for (int64_t n : {1, 2, 7, 63, 64, 100, 1000, 4097, 100000})
      for (int64_t grain : {1, 3, 16, 1000}) {
        const auto ranges = ranges_of(n, grain);
        ASSERT_FALSE(ranges.empty());
        int64_t at = 0;
        for (size_t i = 0; i < ranges.size(); ++i) {
          const auto [b, e] = ranges[i];
          EXPECT_EQ(b, at) << "n " << n << " grain " << grain << " threads " << threads;
          EXPECT_LT(b, e);
          if (ranges.size() > 1) EXPECT_GE(e - b, grain) << "n " << n << " grain " << grain;
          at = e;
        }
        EXPECT_EQ(at, n) << "n " << n << " grain " << grain;
        if (n < 2 * grain) EXPECT_EQ(ranges.size(), 1u);
      }
  }
}

TEST(ParallelFor, NothingToDoCallsNothing) {
  bool called = false;
  cpu::parallel_for(0, 1, [&](int64_t, int64_t) { called = true; });
  cpu::parallel_for(-5, 1, [&](int64_t, int64_t) { called = true; });
  EXPECT_FALSE(called);
}

TEST(ParallelFor, SmallWorkRunsOnTheCaller) {
  ThreadCount tc(4);
  std::thread::id seen;
  cpu::parallel_for(10, 8, [&](int64_t, int64_t) { seen = std::this_thread::get_id(); });
  EXPECT_EQ(seen, std::this_thread::get_id());
}

TEST(ParallelFor, UsesSeveralThreadsForLargeWork) {
  ThreadCount tc(4);
  // Each range waits (bounded) until another thread has run a range: with one thread only, the
  // set would hold one id.
  std::mutex m;
  std::set<std::thread::id> ids;
  std::atomic<int> started{0};
  cpu::parallel_for(16, 1, [&](int64_t, int64_t) {
    started.fetch_add(1);
    {
      std::lock_guard lock(m);
      ids.insert(std::this_thread::get_id());
    }
    for (int spin = 0; spin < 200 && started.load() < 2; ++spin) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  EXPECT_GE(ids.size(), 2u);
}

TEST(ParallelFor, NestedCallsFinishAndCoverEverything) {
  for (int threads : {1, 2, 4}) {
    ThreadCount tc(threads);
    constexpr int64_t kOuter = 64, kMid = 33, kInner = 17;
    std::vector<std::atomic<int>> hits(kOuter * kMid * kInner);
    cpu::parallel_for(kOuter, 1, [&](int64_t b0, int64_t e0) {
      for (int64_t i = b0; i < e0; ++i)
        cpu::parallel_for(kMid, 2, [&](int64_t b1, int64_t e1) {
          for (int64_t j = b1; j < e1; ++j)
            cpu::parallel_for(kInner, 1, [&](int64_t b2, int64_t e2) {
              for (int64_t k = b2; k < e2; ++k) hits[static_cast<size_t>((i * kMid + j) * kInner + k)].fetch_add(1);
            });
        });
    });
    for (const auto& h : hits) ASSERT_EQ(h.load(), 1) << "threads " << threads;
  }
}

TEST(ParallelFor, CallersOnOtherThreadsShareThePool) {
  // Two threads (a scan body run beside the copy queue, say) calling at once, each nesting.
  ThreadCount tc(3);
  std::atomic<int64_t> total{0};
  auto work = [&] {
    for (int rep = 0; rep < 20; ++rep)
      cpu::parallel_for(100, 1, [&](int64_t b, int64_t e) {
        cpu::parallel_for(e - b, 1, [&](int64_t b2, int64_t e2) { total.fetch_add(e2 - b2); });
      });
  };
  std::thread other(work);
  work();
  other.join();
  EXPECT_EQ(total.load(), 2 * 20 * 100);
}

TEST(ParallelFor, AnExceptionReachesTheCallerAndThePoolStaysUsable) {
  for (int threads : {1, 4}) {
    ThreadCount tc(threads);
    EXPECT_THROW(cpu::parallel_for(1000, 10,
                                   [&](int64_t b, int64_t e) {
                                     if (b <= 500 && 500 < e) throw std::runtime_error("range with 500");
                                   }),
                 std::runtime_error);
    // Thrown from a nested call, too.
    EXPECT_THROW(cpu::parallel_for(8, 1,
                                   [&](int64_t, int64_t) {
                                     cpu::parallel_for(100, 1, [&](int64_t b, int64_t) {
                                       if (b == 0) throw Error(ErrorCode::invalid_argument, "nested");
                                     });
                                   }),
                 Error);
    std::atomic<int64_t> sum{0};
    cpu::parallel_for(1000, 10, [&](int64_t b, int64_t e) { sum.fetch_add(e - b); });
    EXPECT_EQ(sum.load(), 1000);
  }
}

// ---- Kernels: the same bytes whatever the thread count.

// Runs `make` (which runs kernels and returns their results) with 1 thread and with several, and
// compares the results byte for byte.
template <class Make> void same_bytes_across_thread_counts(const std::string& what, Make make) {
  std::vector<Buffer> one, many;
  {
    ThreadCount tc(1);
    one = make();
  }
  for (int threads : {2, 3, 5}) {
    ThreadCount tc(threads);
    many = make();
    ASSERT_EQ(one.size(), many.size());
    for (size_t i = 0; i < one.size(); ++i)
      EXPECT_TRUE(one[i].same_bytes(many[i])) << what << ": result " << i << " differs with " << threads << " threads";
  }
}

// The idle work (set_idle_work) is done by a thread that waits for another's chunk, and never
// while nothing waits: a job whose chunks take equal time on an idle pool still finishes.
std::atomic<int> idle_calls{0};
bool count_idle_call() {
  ++idle_calls;
  return false;  // found nothing: the waiting thread goes on spinning
}

TEST(ParallelFor, AThreadThatWaitsForAChunkDoesTheIdleWork) {
  ThreadCount tc(2);
  const cpu::IdleWork before = cpu::set_idle_work(&count_idle_call);
  idle_calls = 0;
  std::atomic<int> chunks_run{0};
  // Two chunks, one slow: whichever thread takes the fast one waits for the slow one.
  cpu::parallel_for(2, 1, [&](int64_t b, int64_t) {
    if (b == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ++chunks_run;
  });
  EXPECT_EQ(chunks_run, 2);
  // A worker that woke only after the job (a loaded machine) spins, and calls it, before it blocks.
  for (int i = 0; i < 2000 && idle_calls.load() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_GT(idle_calls.load(), 0);
  EXPECT_EQ(cpu::set_idle_work(before), &count_idle_call);
}

// Idle work that finds something keeps a waiting thread at it (the spin's clock starts again),
// and the job's own chunks still finish: the work is done in pieces between probes.
std::atomic<int> idle_pieces{0};
bool do_idle_piece() {
  if (idle_pieces.load() >= 1000) return false;
  ++idle_pieces;
  return true;
}

TEST(ParallelFor, IdleWorkWithPiecesLeftDoesNotStopTheJob) {
  ThreadCount tc(2);
  const cpu::IdleWork before = cpu::set_idle_work(&do_idle_piece);
  idle_pieces = 0;
  std::atomic<int64_t> covered{0};
  cpu::parallel_for(2, 1, [&](int64_t b, int64_t e) {
    if (b == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    covered += e - b;
  });
  EXPECT_EQ(covered, 2);
  // The pool's worker spins between jobs too: give it time to run out of pieces.
  for (int i = 0; i < 200 && idle_pieces.load() < 1000; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(idle_pieces.load(), 1000);
  cpu::set_idle_work(before);
}

TEST(ParallelKernels, ReductionsGiveTheSameBitsForEveryThreadCount) {
  // Leading reduced axis (column blocks), trailing reduced axis (row tasks), a middle one,
  // outermost and innermost reduced (partial sums combined in order), and everything; big enough
  // to split.
  const std::vector<std::pair<Shape, ir::Dims>> cases = {
      {{4096, 96}, {0}}, {{96, 4096}, {1}}, {{64, 300, 8}, {1}}, {{2048, 3, 40}, {0, 2}}, {{512, 256}, {0, 1}}};
  for (DType d : {DType::f32, DType::f64, DType::bf16, DType::i32})
    for (const auto& [shape, axes] : cases) {
      const Buffer x = random_buffer(d, shape);
      Shape out;
      for (size_t k = 0; k < shape.size(); ++k)
        if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(k)) == axes.end()) out.push_back(shape[k]);
      for (Primitive p : {Primitive::reduce_sum, Primitive::reduce_max})
        same_bytes_across_thread_counts(fmt::format("{} {} {}", primitive_name(p), name(d), shape_string(shape)), [&] {
          std::vector<Buffer> r;
          r.push_back(run1(p, ir::ReduceParams{axes}, {&x}, d, out));
          return r;
        });
    }
}

TEST(ParallelKernels, PartialSumsStayAccurate) {
  // Outermost and innermost axes reduced: partial sums over slices of the outermost axis change
  // the order of additions against one pass; the result is still the sum within f32 rounding
  // (bound: 1e-6 * sum |x|, far below the size of a wrong or missing slice).
  const Buffer x = random_buffer(DType::f32, {8192, 4, 40});
  const Buffer y = run1(Primitive::reduce_sum, ir::ReduceParams{{0, 2}}, {&x}, DType::f32, {4});
  std::vector<double> want(4, 0.0), mag(4, 0.0);
  for (int64_t i = 0; i < x.size(); ++i) {
    want[static_cast<size_t>(i / 40 % 4)] += x.get(i);
    mag[static_cast<size_t>(i / 40 % 4)] += std::abs(x.get(i));
  }
  for (size_t j = 0; j < 4; ++j) EXPECT_NEAR(y.get(static_cast<int64_t>(j)), want[j], 1e-6 * mag[j]) << "result " << j;
}

TEST(ParallelKernels, SplitsByResultKeepTheSerialBits) {
  // A bias gradient ([rows, C] -> [C]: column blocks) and a row reduction (row tasks) add in the
  // serial order: the same bits as a plain loop in the accumulator type.
  const Buffer x = random_buffer(DType::f32, {4096, 96});
  const Buffer cols = run1(Primitive::reduce_sum, ir::ReduceParams{{0}}, {&x}, DType::f32, {96});
  for (int64_t j = 0; j < 96; ++j) {
    float s = 0;
    for (int64_t i = 0; i < 4096; ++i) s += x.as<float>()[i * 96 + j];
    ASSERT_EQ(cols.as<float>()[j], s) << "column " << j;
  }
  const Buffer big = random_buffer(DType::f64, {4, 1 << 16});
  const Buffer sums = run1(Primitive::reduce_sum, ir::ReduceParams{{0}}, {&big}, DType::f64, {1 << 16});
  for (int64_t j = 0; j < (1 << 16); ++j) {
    double s = 0;
    for (int64_t i = 0; i < 4; ++i) s += big.as<double>()[i * (1 << 16) + j];
    ASSERT_EQ(sums.as<double>()[j], s) << "column " << j;
  }
}

TEST(ParallelKernels, DataMovementGivesTheSameBytesForEveryThreadCount) {
  const Buffer m = random_buffer(DType::f32, {300, 517});
  const Buffer t4 = random_buffer(DType::bf16, {6, 70, 33, 40});
  const Buffer row = random_buffer(DType::f32, {1, 700});
  const Buffer ids = filled(DType::i32, {2000, 1}, [] {
    std::vector<double> v;
    for (int i = 0; i < 2000; ++i) v.push_back((i * 37) % 320 - 10);  // some out of bounds
    return v;
  }());
  same_bytes_across_thread_counts("movement", [&] {
    std::vector<Buffer> r;
    r.push_back(run1(Primitive::transpose, ir::TransposeParams{{1, 0}}, {&m}, DType::f32, {517, 300}));
    r.push_back(run1(Primitive::transpose, ir::TransposeParams{{2, 0, 3, 1}}, {&t4}, DType::bf16, {33, 6, 40, 70}));
    r.push_back(run1(Primitive::broadcast_in_dim, ir::BroadcastInDimParams{{64, 700}, {0, 1}}, {&row}, DType::f32,
                     {64, 700}));
    r.push_back(run1(Primitive::iota, ir::IotaParams{.dtype = DType::f32, .shape = {40, 900}, .dimension = 1}, {}, DType::f32, {40, 900}));
    r.push_back(run1(Primitive::gather,
                     ir::GatherParams{.offset_dims = {1}, .collapsed_slice_dims = {0}, .start_index_map = {0},
                                      .slice_sizes = {1, 517}},
                     {&m, &ids}, DType::f32, {2000, 517}));
    r.push_back(run1(Primitive::cumsum, ir::CumulativeParams{.axis = 0, .reverse = false}, {&m}, DType::f32, {300, 517}));
    r.push_back(run1(Primitive::argmax, ir::ArgReduceParams{.axis = 1}, {&m}, DType::i32, {300}));
    r.push_back(run1(Primitive::concatenate, ir::ConcatenateParams{.dimension = 1}, {&m, &m}, DType::f32, {300, 1034}));
    return r;
  });
}

TEST(ParallelKernels, ThreefryAndDotGiveTheSameBytesForEveryThreadCount) {
  const Buffer k0 = scalar_i32(1234), k1 = scalar_i32(-99);
  const Buffer x0 = random_buffer(DType::i32, {70000}, -1e9, 1e9), x1 = random_buffer(DType::i32, {70000}, -1e9, 1e9);
  const Buffer a = random_buffer(DType::f32, {512, 300}), b = random_buffer(DType::f32, {300, 384});
  const Buffer ab = random_buffer(DType::bf16, {8, 128, 64}), bb = random_buffer(DType::bf16, {8, 64, 96});
  const Buffer big_a = random_buffer(DType::f32, {650, 1024}), big_b = random_buffer(DType::f32, {1024, 1024});
  const Buffer big_ab = random_buffer(DType::bf16, {650, 256}), big_bb = random_buffer(DType::bf16, {256, 512});
  const Buffer batch_a = random_buffer(DType::bf16, {3, 250, 256}), batch_b = random_buffer(DType::bf16, {3, 256, 512});
  same_bytes_across_thread_counts("threefry and dot", [&] {
    std::vector<Buffer> r = run(Primitive::threefry2x32, ir::NoParams{}, {&k0, &k1, &x0, &x1},
                                {{DType::i32, {70000}}, {DType::i32, {70000}}});
    r.push_back(run1(Primitive::dot_general, ir::DotGeneralParams{{{1}, {0}, {}, {}}}, {&a, &b}, DType::f32, {512, 384}));
    // lhs transposed in place ([K, M] read with the BLAS flag)
    r.push_back(run1(Primitive::dot_general, ir::DotGeneralParams{{{0}, {0}, {}, {}}}, {&a, &a}, DType::f32, {300, 300}));
    r.push_back(run1(Primitive::dot_general, ir::DotGeneralParams{{{2}, {1}, {0}, {0}}}, {&ab, &bb}, DType::bf16,
                     {8, 128, 96}));
    // Planned in 4 blocks of rows (162 and 163): with fewer threads than blocks oneDNN's products
    // run in fewer, larger blocks (1, 2 or 3 here), and must give the same bits; batched, 3 x 2
    // blocks run as 3 whole products on 3 threads.
    r.push_back(run1(Primitive::dot_general, ir::DotGeneralParams{{{1}, {0}, {}, {}}}, {&big_a, &big_b}, DType::f32,
                     {650, 1024}));
    r.push_back(run1(Primitive::dot_general, ir::DotGeneralParams{{{1}, {0}, {}, {}}}, {&big_ab, &big_bb},
                     DType::bf16, {650, 512}));
    r.push_back(run1(Primitive::dot_general, ir::DotGeneralParams{{{2}, {1}, {0}, {0}}}, {&batch_a, &batch_b},
                     DType::bf16, {3, 250, 512}));
    return r;
  });
}

TEST(ParallelKernels, AProductPlannedInMoreBlocksThanThreadsRunsInFewer) {
  // 650x1024x1024 is planned in 4 blocks of rows; with fewer threads oneDNN runs as many blocks as
  // give every thread the same share (the same bits: the test above).
  const Buffer a = random_buffer(DType::f32, {650, 1024}), b = random_buffer(DType::f32, {1024, 1024});
  for (const auto& [threads, gemms] : {std::pair{5, 4}, {1, 1}, {2, 2}, {3, 3}, {4, 4}}) {
    ThreadCount tc(threads);
    const int64_t before = cpu::gemm_calls();
    run1(Primitive::dot_general, ir::DotGeneralParams{{{1}, {0}, {}, {}}}, {&a, &b}, DType::f32, {650, 1024});
    const int64_t ran = cpu::gemm_calls() - before;
    if (ran == 0) GTEST_SKIP() << "this path multiplies f32 with OpenBLAS";
    EXPECT_EQ(ran, gemms) << threads << " threads";
  }
}

TEST(ParallelKernels, GemmCutIntoBlocksIsTheProduct) {
  // Large enough to be cut: along M (rows of A and C) and along N (columns of B and C), with B
  // read as stored and through the transpose flag. Checked against a product in double.
  const Buffer a = random_buffer(DType::f32, {600, 200}), wide = random_buffer(DType::f32, {200, 1500});
  const Buffer a2 = random_buffer(DType::f32, {300, 200}), wide_t = random_buffer(DType::f32, {1500, 200});
  struct Case {
    const Buffer *lhs, *rhs;
    ir::DotDimensionNumbers dn;
    int64_t M, N;
    bool rhs_transposed;
  };
  for (const Case& c : {Case{&a, &wide, {{1}, {0}, {}, {}}, 600, 1500, false},
                        Case{&a2, &wide, {{1}, {0}, {}, {}}, 300, 1500, false},
                        Case{&a2, &wide_t, {{1}, {1}, {}, {}}, 300, 1500, true}}) {
    const Buffer y = run1(Primitive::dot_general, ir::DotGeneralParams{c.dn}, {c.lhs, c.rhs}, DType::f32, {c.M, c.N});
    for (int64_t i = 0; i < c.M; i += 7)
      for (int64_t j = 0; j < c.N; j += 5) {
        double want = 0, mag = 0;
        for (int64_t k = 0; k < 200; ++k) {
          const double t = c.lhs->get(i * 200 + k) * c.rhs->get(c.rhs_transposed ? j * 200 + k : k * 1500 + j);
          want += t;
          mag += std::abs(t);
        }
        ASSERT_NEAR(y.get(i * c.N + j), want, 1e-5 * mag) << "M " << c.M << " element " << i << "," << j;
      }
  }
}

}  // namespace
}  // namespace ferry::kernel_test
