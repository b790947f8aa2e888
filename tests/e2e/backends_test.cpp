// The end-to-end programs on every backend the build has (ferry::built_backends(): "cpu", and
// "cuda" in a CUDA build): each gives the CPU backend's results, and the device (and host) peak it
// measures equals the planned one. On a backend that cannot run here (a CUDA build on a machine
// without a GPU) every test is skipped, saying why.
//
// Tolerance: another backend sums in another order (cuBLAS's GEMM tiling, a tree reduction, atomic
// adds in scatter_add), so f32 results agree to a relative 1e-4 of the largest magnitude of the
// array, not bit for bit; on the CPU itself they are equal.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ferry/ferry.h"
#include "support/memory_check.h"
#include "training.h"

namespace fy = ferry;
namespace fm = ferry::models;

namespace {

constexpr double kRelativeTolerance = 1e-4;

class Backends : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string why;
    if (!fy::backend_available(GetParam(), &why)) GTEST_SKIP() << "the " << GetParam() << " backend cannot run here: " << why;
  }
  fy::CompileOptions options() const {
    fy::CompileOptions o;
    o.backend = GetParam();
    o.checked = true;  // released buffers poisoned: a stale read shows up as NaN on any backend
    return o;
  }
  std::vector<fy::Array> on_backend(const std::vector<fy::Array>& xs) const {
    std::vector<fy::Array> out;
    for (const fy::Array& x : xs) out.push_back(x.to_backend(GetParam()));
    return out;
  }
};

void expect_close(const fy::Array& got, const fy::Array& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  if (got.dtype() != fy::DType::f32) {
    EXPECT_TRUE(got.equals(want)) << what;
    return;
  }
  const std::vector<float> g = got.to_vector<float>(), w = want.to_vector<float>();
  double scale = 1e-30;
  for (float v : w) scale = std::max(scale, static_cast<double>(std::abs(v)));
  int failures = 0;
  for (size_t i = 0; i < w.size() && failures < 5; ++i)
    if (!(std::abs(g[i] - w[i]) <= kRelativeTolerance * scale)) {
      ++failures;
      ADD_FAILURE() << what << "[" << i << "] = " << g[i] << ", the CPU backend gives " << w[i];
    }
}

// Runs `lowered` on the CPU and on the backend under test; the results agree and the backend's
// measured peaks are the planned ones.
void expect_same_as_cpu(const fy::Lowered& lowered, const fy::CompileOptions& options, const std::vector<fy::Array>& args,
                        const std::vector<fy::Array>& backend_args, const std::string& what) {
  std::vector<fy::Array> want = lowered.compile().run(args);
  fy::Compiled c = lowered.compile(options);
  std::vector<fy::Array> got = fy::testing::run_checked(c, backend_args);
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].backend(), options.backend) << what << " output " << i;
    expect_close(got[i], want[i], what + " output " + std::to_string(i));
  }
}

TEST_P(Backends, ScanMlpGradientsUnderEveryPolicy) {
  const fm::ScanMlpConfig c{.batch = 8, .width = 16, .hidden = 32, .layers = 3};
  std::vector<fy::Array> args{fm::scan_mlp_input(c, 1)};
  for (const fy::Array& w : fm::scan_mlp_params(c, 1)) args.push_back(w);
  const std::vector<fy::Array> on = on_backend(args);
  // no checkpoint, nothing_saveable, the dot policies, names saved and names offloaded (streamed
  // scan slices through pinned host memory).
  for (const fm::NamedPolicy& p : fm::benchmark_policies(fm::scan_mlp_names()))
    expect_same_as_cpu(fm::lower_scan_mlp_grad(c, p.policy), options(), args, on, "scan_mlp " + p.name);
}

TEST_P(Backends, GptTrainingStepUnderNoCheckpointAndOffloadedNames) {
  const fm::GptConfig c{.vocab = 16, .d_model = 16, .heads = 2, .seq = 8, .batch = 2, .layers = 2};
  std::vector<fy::Array> params = fm::gpt_params(c, 3);
  auto [tokens, targets] = fm::copy_task_batch(c, 3);
  // (params, m, v, step, tokens, targets), m and v zero, step 0; not donated, so the CPU run and
  // the backend's run can share the arguments.
  std::vector<fy::Array> args = params;
  for (int copy = 0; copy < 2; ++copy)
    for (const fy::Array& p : params) args.push_back(fy::zeros(p.shape(), p.dtype()));
  args.push_back(fy::Array::scalar<float>(0));
  args.push_back(tokens);
  args.push_back(targets);
  const std::vector<fy::Array> on = on_backend(args);
  const std::vector<fm::NamedPolicy> policies = fm::benchmark_policies(fm::gpt_names());
  for (const fm::NamedPolicy& p : {policies.front(), policies.back()})
    expect_same_as_cpu(fm::lower_gpt_train_step(c, p.policy, 3e-3, /*donate=*/false), options(), args, on,
                       "gpt " + p.name);
}

TEST_P(Backends, ControlFlowGatherAndReductions) {
  // while_loop (its predicate read on the host), cond, a gather, argmax, cumsum and a transpose.
  auto f = fy::jit([](fy::Tensor x, fy::Tensor idx) {
    fy::Tensor doubled = fy::while_loop([](fy::Tensor v) { return fy::sum(v) < 1000.0; },
                                        [](fy::Tensor v) { return v * 2.0; }, x);
    fy::Tensor picked = fy::take(doubled, idx, 0);
    fy::Tensor branch = fy::cond(fy::sum(x) > 0.0, [](fy::Tensor v) { return fy::sin(v); },
                                 [](fy::Tensor v) { return fy::cos(v); }, picked);
    return std::vector<fy::Tensor>{branch, fy::argmax(doubled, 1), fy::cumsum(doubled, 0), fy::transpose(doubled, {1, 0})};
  });
  std::vector<float> xs(12);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = 0.25f * static_cast<float>(i) - 1.0f;
  const std::vector<fy::Array> args{fy::Array::from(xs, {3, 4}), fy::Array::from(std::vector<int32_t>{2, 0, 2}, {3})};
  expect_same_as_cpu(f.lower(args[0], args[1]), options(), args, on_backend(args), "control flow");
}

INSTANTIATE_TEST_SUITE_P(EachBuilt, Backends, ::testing::ValuesIn(fy::built_backends()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(BackendChoice, AnUnknownBackendIsUnimplementedAtCompileTimeNamingTheBuiltOnes) {
  auto f = fy::jit([](fy::Tensor x) { return fy::sum(x); });
  fy::CompileOptions o;
  o.backend = "tpu";
  try {
    f.lower(fy::ones({2})).compile(o);
    FAIL() << "expected UNIMPLEMENTED";
  } catch (const fy::Error& e) {
    EXPECT_EQ(e.code(), fy::ErrorCode::unimplemented);
    EXPECT_NE(e.message().find("\"tpu\""), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("\"cpu\""), std::string::npos) << e.message();
  }
}

TEST(BackendChoice, ArgumentsOfAnotherBackendAreRefusedNamingTheFix) {
  auto f = fy::jit([](fy::Tensor x) { return fy::sum(x); });
  const fy::Array x = fy::ones({4});
  int checked = 0;
  for (const std::string& b : fy::built_backends()) {
    if (b == "cpu" || !fy::backend_available(b)) continue;
    fy::CompileOptions o;
    o.backend = b;
    // A CPU array to a program of another backend, and that backend's array to a CPU program.
    for (auto [program, argument] : {std::pair{f.lower(x).compile(o), x}, std::pair{f.lower(x).compile(), x.to_backend(b)}}) {
      try {
        program.run({argument});
        ADD_FAILURE() << "expected INVALID_ARGUMENT (" << b << ")";
      } catch (const fy::Error& e) {
        EXPECT_EQ(e.code(), fy::ErrorCode::invalid_argument);
        EXPECT_NE(e.message().find("to_backend"), std::string::npos) << e.message();
      }
    }
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no backend but the cpu can run here: every Array is a CPU array";
}

TEST(BackendChoice, ArraysMoveBetweenBackendsAndBack) {
  const fy::Array x = fy::Array::from(std::vector<float>{1, 2, 3}, {3}, fy::MemoryKind::pinned_host);
  for (const std::string& b : fy::built_backends()) {
    if (!fy::backend_available(b)) continue;
    const fy::Array there = x.to_backend(b);
    EXPECT_EQ(there.backend(), b);
    EXPECT_EQ(there.memory_kind(), fy::MemoryKind::pinned_host);
    EXPECT_EQ(there.to_vector<float>(), (std::vector<float>{1, 2, 3})) << b;
    EXPECT_TRUE(there.to_backend("cpu").equals(x)) << b;
  }
}

}  // namespace
