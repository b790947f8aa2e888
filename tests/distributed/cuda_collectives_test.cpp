// The collectives on the cuda backend (NCCL) under `mpirun -np N` (CTest
// distributed.cuda_collectives_np2; bench/gpu/run runs it with one process per GPU): every program
// gives on the GPU what it gives on the CPU backend, whose collectives are MPI's. psum in each
// dtype NCCL sums, all_gather and psum_scatter along dimensions 0 and 1, tiled and not (the
// outermost as asynchronous pairs, the others through the rearranging kernels), axis_index, and a
// data-parallel training step. Inputs are small integers, so every sum is exact in any order and
// the results are compared bit for bit; the step (matrix products in cuBLAS's order) within a
// tolerance. Where no GPU can be used, or this machine has fewer GPUs than processes (NCCL takes
// one GPU per process), every test is skipped, saying why.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "ferry/ferry.h"
#include "models.h"
#include "support/memory_check.h"

namespace fy = ferry;

namespace {

class CudaJoined : public ::testing::Environment {
 public:
  void SetUp() override {
    fy::distributed::initialize();  // every process joins, whether or not it then skips
    std::string why;
    if (!fy::backend_available("cuda", &why)) GTEST_SKIP() << "cuda collectives skipped: " << why;
    int gpus = 0;
    if (cudaGetDeviceCount(&gpus) != cudaSuccess) gpus = 0;
    const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    const int here = local != nullptr ? std::atoi(local) : 1;
    if (gpus < here)
      GTEST_SKIP() << "cuda collectives skipped: " << here << " processes on this machine and " << gpus
                   << " GPU(s); NCCL takes one GPU per process (run with -np " << gpus << ")";
  }
};

const auto* const kJoined = ::testing::AddGlobalTestEnvironment(new CudaJoined);

int n() { return fy::distributed::process_count(); }
int me() { return fy::distributed::process_index(); }

// This process's input: small integers that differ between processes, exact in every dtype.
fy::Array input(fy::Shape shape) {
  std::vector<float> v(static_cast<size_t>(fy::num_elements(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((me() + 1) * static_cast<int>(i % 7 + 1));
  return fy::Array::from(v, std::move(shape));
}

fy::CompileOptions on_cuda() {
  fy::CompileOptions o;
  o.backend = "cuda";
  o.checked = true;  // released buffers poisoned: a read of a stale buffer shows
  return o;
}

// f(x) on the CPU backend and on the GPU: the same bytes, and the GPU's measured peak the planned.
template <class F> void expect_same_on_gpu(F f, const fy::Array& x, const std::string& what) {
  const fy::Lowered lowered = fy::jit(f).lower(x);
  const fy::Array want = lowered.compile().run({x}).at(0);
  fy::Compiled c = lowered.compile(on_cuda());
  const fy::Array got = fy::testing::run_checked(c, {x.to_backend("cuda")}).at(0);
  EXPECT_EQ(got.backend(), "cuda") << what;
  EXPECT_TRUE(got.equals(want)) << what << " on process " << me() << ": the GPU gives " << got.to_string()
                                << ", the CPU " << want.to_string();
}

TEST(CudaCollectives, PsumInEveryDtypeNcclSums) {
  for (fy::DType t : {fy::DType::f32, fy::DType::f64, fy::DType::i32, fy::DType::f16, fy::DType::bf16})
    expect_same_on_gpu([t](fy::Tensor v) { return fy::psum(fy::convert(v, t), "data"); }, input({3, 4}),
                       "psum of " + std::string(fy::dtype_name(t)));
  expect_same_on_gpu([](fy::Tensor v) { return fy::pmean(v, "data"); }, input({5}), "pmean");
}

TEST(CudaCollectives, AllGatherAlongDimensionsZeroAndOneTiledAndNot) {
  for (int64_t d : {0, 1})
    for (bool tiled : {false, true}) {
      const std::string what = "all_gather dimension " + std::to_string(d) + (tiled ? " tiled" : "");
      expect_same_on_gpu([d, tiled](fy::Tensor v) { return fy::all_gather(v, "data", d, tiled); }, input({2, 3}), what);
      // Two-byte elements through the rearrangement too.
      expect_same_on_gpu([d, tiled](fy::Tensor v) { return fy::all_gather(fy::convert(v, fy::DType::bf16), "data", d, tiled); },
                         input({2, 3}), what + " (bf16)");
    }
}

TEST(CudaCollectives, PsumScatterAlongDimensionsZeroAndOneTiledAndNot) {
  const int64_t k = n();
  expect_same_on_gpu([](fy::Tensor v) { return fy::psum_scatter(v, "data", 0); }, input({k, 2, 3}), "dimension 0");
  expect_same_on_gpu([](fy::Tensor v) { return fy::psum_scatter(v, "data", 0, true); }, input({2 * k, 3}),
                     "dimension 0 tiled");
  expect_same_on_gpu([](fy::Tensor v) { return fy::psum_scatter(v, "data", 1); }, input({2, k, 3}), "dimension 1");
  expect_same_on_gpu([](fy::Tensor v) { return fy::psum_scatter(v, "data", 1, true); }, input({2, 3 * k}),
                     "dimension 1 tiled");
  expect_same_on_gpu([](fy::Tensor v) { return fy::psum_scatter(fy::convert(v, fy::DType::f16), "data", 1); },
                     input({2, k, 3}), "dimension 1 (f16)");
}

TEST(CudaCollectives, AxisIndexIsThisProcesssIndex) {
  expect_same_on_gpu([](fy::Tensor v) { return v + fy::convert(fy::axis_index("data"), fy::DType::f32); }, input({2}),
                     "axis_index");
}

// Rows [first, first + count) of a [rows, cols] i32 array.
fy::Array rows_of(const fy::Array& a, int64_t first, int64_t count) {
  const int64_t cols = a.shape()[1];
  std::vector<int32_t> v = a.to_vector<int32_t>();
  return fy::Array::from(std::vector<int32_t>(v.begin() + first * cols, v.begin() + (first + count) * cols), {count, cols});
}

// Data parallelism: each process's gradient of its part of the batch, averaged by pmean (whose
// all-reduces the compiler runs beside the backward pass), then one SGD step; on the GPU as on
// the CPU.
TEST(CudaCollectives, DataParallelStepMatchesTheCpuBackend) {
  fy::models::GptConfig c;
  c.vocab = 16, c.d_model = 32, c.heads = 2, c.seq = 8, c.layers = 2, c.dropout = 0, c.batch = 4 * n();
  fy::models::GptConfig part = c;
  part.batch = 4;
  const std::vector<fy::Array> params = fy::models::gpt_params(c, 7);
  auto [tokens, targets] = fy::models::copy_task_batch(c, 11);
  auto step = fy::jit([part](std::vector<fy::Tensor> p, fy::Tensor tok, fy::Tensor tgt) {
    std::vector<fy::Tensor> g = fy::pmean(fy::grad([&](std::vector<fy::Tensor> q) {
      return fy::models::gpt_loss(q, tok, tgt, part, std::nullopt);
    })(p), "data");
    for (size_t i = 0; i < p.size(); ++i) p[i] = p[i] - 0.1 * g[i];
    return p;
  });
  const fy::Array my_tokens = rows_of(tokens, 4 * me(), 4), my_targets = rows_of(targets, 4 * me(), 4);
  const fy::Lowered lowered = step.lower(params, my_tokens, my_targets);
  std::vector<fy::Array> args = params, gpu_args;
  args.push_back(my_tokens);
  args.push_back(my_targets);
  for (const fy::Array& a : args) gpu_args.push_back(a.to_backend("cuda"));
  const std::vector<fy::Array> want = lowered.compile().run(args);
  fy::Compiled gpu = lowered.compile(on_cuda());
  const std::vector<fy::Array> got = fy::testing::run_checked(gpu, gpu_args);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    const std::vector<float> g = got[k].to_vector<float>(), w = want[k].to_vector<float>();
    float scale = 1e-3f;
    for (float v : w) scale = std::max(scale, std::abs(v));
    for (size_t i = 0; i < w.size(); ++i)
      ASSERT_NEAR(g[i], w[i], 1e-4f * scale) << "parameter " << fy::models::gpt_param_names()[k] << " element " << i
                                              << " on process " << me();
  }
}

}  // namespace
