// Collectives under `mpirun -np 2` (CTest distributed.collectives_np2; any N works): each process
// joins once (a global environment), then every test runs the same programs on every process.
// Values are checked against what the processes' inputs make them (each process's input is a
// function of its index, so every process knows all of them), gradients against JAX's definitions
// (each collective's VJP is the other's transpose), and data parallelism against one process
// computing on the whole batch, which every process also does itself.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ferry/ferry.h"
#include "models.h"
#include "distributed/joined.h"
#include "support/memory_check.h"

namespace fy = ferry;

namespace {

const auto* const kJoined = ::testing::AddGlobalTestEnvironment(new fy::testing::Joined);

int n() { return fy::testing::process_count(); }
int me() { return fy::testing::process_index(); }

// Process r's input: element i is 100 r + i (+ offset).
std::vector<float> input_of(int r, int64_t count, float offset = 0) {
  std::vector<float> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) v[static_cast<size_t>(i)] = 100.0f * static_cast<float>(r) + static_cast<float>(i) + offset;
  return v;
}

template <class F> std::vector<float> run1(F f, const fy::Array& x) {
  fy::Compiled c = fy::jit(f).lower(x).compile();
  std::vector<fy::Array> out = fy::testing::run_checked(c, {x});
  EXPECT_EQ(fy::testing::high_water_mismatch(c), "") << "process " << me();
  return out.at(0).to_vector<float>();
}

TEST(Collectives, PsumAndPmeanAreEveryProcessesSumAndMean) {
  const fy::Shape s{3, 4};
  const fy::Array x = fy::Array::from(input_of(me(), 12), s);
  std::vector<float> sum(12, 0.0f);
  for (int r = 0; r < n(); ++r)
    for (size_t i = 0; i < 12; ++i) sum[i] += input_of(r, 12)[i];
  EXPECT_EQ(run1([](fy::Tensor v) { return fy::psum(v, "data"); }, x), sum);
  std::vector<float> mean = run1([](fy::Tensor v) { return fy::pmean(v, "data"); }, x);
  for (size_t i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(mean[i], sum[i] / static_cast<float>(n()));
}

TEST(Collectives, AxisIndexIsThisProcesssIndex) {
  fy::Compiled c = fy::jit([](fy::Tensor v) { return v + fy::convert(fy::axis_index("data"), fy::DType::f32); })
                       .lower(fy::zeros({2}))
                       .compile();
  EXPECT_EQ(c.run({fy::zeros({2})})[0].to_vector<float>(), (std::vector<float>{float(me()), float(me())}));
}

TEST(Collectives, AllGatherStacksOrConcatenatesAlongAnyDimension) {
  const int64_t a = 2, b = 3;
  const fy::Array x = fy::Array::from(input_of(me(), a * b), {a, b});
  auto at = [&](int r, int64_t i, int64_t j) { return input_of(r, a * b)[static_cast<size_t>(i * b + j)]; };
  // Not tiled, a new dimension 0 ([N, a, b]) and 1 ([a, N, b]).
  std::vector<float> g0 = run1([](fy::Tensor v) { return fy::all_gather(v, "data", 0); }, x);
  std::vector<float> g1 = run1([](fy::Tensor v) { return fy::all_gather(v, "data", 1); }, x);
  // Tiled along dimension 1 ([a, N b]).
  std::vector<float> t1 = run1([](fy::Tensor v) { return fy::all_gather(v, "data", 1, true); }, x);
  for (int r = 0; r < n(); ++r)
    for (int64_t i = 0; i < a; ++i)
      for (int64_t j = 0; j < b; ++j) {
        EXPECT_EQ(g0[static_cast<size_t>((r * a + i) * b + j)], at(r, i, j));
        EXPECT_EQ(g1[static_cast<size_t>((i * n() + r) * b + j)], at(r, i, j));
        EXPECT_EQ(t1[static_cast<size_t>(i * n() * b + r * b + j)], at(r, i, j));
      }
}

TEST(Collectives, PsumScatterKeepsThisProcesssPartOfTheSum) {
  const int64_t a = 2, b = 3;
  // Not tiled along dimension 1: x is [a, N, b]; this process keeps [a, b], its slice of the sum.
  const fy::Array x = fy::Array::from(input_of(me(), a * n() * b), {a, n(), b});
  std::vector<float> got = run1([](fy::Tensor v) { return fy::psum_scatter(v, "data", 1); }, x);
  ASSERT_EQ(got.size(), static_cast<size_t>(a * b));
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j) {
      float want = 0;
      for (int r = 0; r < n(); ++r) want += input_of(r, a * n() * b)[static_cast<size_t>((i * n() + me()) * b + j)];
      EXPECT_EQ(got[static_cast<size_t>(i * b + j)], want);
    }
  // Tiled along dimension 0: x is [N a, b]; this process keeps rows [me a, (me + 1) a).
  const fy::Array y = fy::Array::from(input_of(me(), n() * a * b), {n() * a, b});
  std::vector<float> tiled = run1([](fy::Tensor v) { return fy::psum_scatter(v, "data", 0, true); }, y);
  for (int64_t k = 0; k < a * b; ++k) {
    float want = 0;
    for (int r = 0; r < n(); ++r) want += input_of(r, n() * a * b)[static_cast<size_t>(me() * a * b + k)];
    EXPECT_EQ(tiled[static_cast<size_t>(k)], want);
  }
}

// all_gather and psum_scatter are each other's transpose: the VJP of one with cotangent g is the
// other applied to g, computed here directly.
TEST(Collectives, VjpsAreEachOthersTranspose) {
  const int64_t a = 2, b = 3;
  const fy::Array x = fy::Array::from(input_of(me(), a * b), {a, b});
  const fy::Array g = fy::Array::from(input_of(me(), a * n() * b, 0.5f), {a, n(), b});
  auto gather_vjp = fy::jit([](fy::Tensor v, fy::Tensor ct) {
    auto [out, pullback] = fy::vjp([](fy::Tensor u) { return fy::all_gather(u, "data", 1); }, v);
    return std::get<0>(pullback(ct));
  });
  auto scatter = fy::jit([](fy::Tensor ct) { return fy::psum_scatter(ct, "data", 1); });
  EXPECT_EQ(gather_vjp.lower(x, g).compile().run({x, g})[0].to_vector<float>(),
            scatter.lower(g).compile().run({g})[0].to_vector<float>());
  auto scatter_vjp = fy::jit([](fy::Tensor v, fy::Tensor ct) {
    auto [out, pullback] = fy::vjp([](fy::Tensor u) { return fy::psum_scatter(u, "data", 1); }, v);
    return std::get<0>(pullback(ct));
  });
  auto gather = fy::jit([](fy::Tensor ct) { return fy::all_gather(ct, "data", 1); });
  EXPECT_EQ(scatter_vjp.lower(g, x).compile().run({g, x})[0].to_vector<float>(),
            gather.lower(x).compile().run({x})[0].to_vector<float>());
  // psum's VJP is psum of the cotangent (as under jax.pmap).
  auto psum_grad = fy::jit([](fy::Tensor v) { return fy::grad([](fy::Tensor u) { return fy::sum(fy::psum(u * u, "data")); })(v); });
  std::vector<float> got = psum_grad.lower(x).compile().run({x})[0].to_vector<float>();
  std::vector<float> xs = x.to_vector<float>();
  for (size_t i = 0; i < xs.size(); ++i) EXPECT_FLOAT_EQ(got[i], 2.0f * static_cast<float>(n()) * xs[i]);
}

// Rows [first, first + count) of a [rows, cols] i32 array.
fy::Array rows_of(const fy::Array& a, int64_t first, int64_t count) {
  const int64_t cols = a.shape()[1];
  std::vector<int32_t> v = a.to_vector<int32_t>();
  return fy::Array::from(std::vector<int32_t>(v.begin() + first * cols, v.begin() + (first + count) * cols), {count, cols});
}

fy::models::GptConfig small_gpt() {
  fy::models::GptConfig c;
  c.vocab = 16;
  c.d_model = 32;
  c.heads = 2;
  c.seq = 8;
  c.layers = 2;
  c.dropout = 0;
  return c;
}

// Data parallelism: each process's gradient of its part of the batch, averaged by pmean, is the
// gradient of the whole batch on one process (summation order aside).
TEST(DataParallel, AveragedGradientsOfTheShardsAreTheWholeBatchs) {
  fy::models::GptConfig whole = small_gpt();
  whole.batch = 4 * n();
  fy::models::GptConfig part = whole;
  part.batch = 4;
  const std::vector<fy::Array> params = fy::models::gpt_params(whole, 7);
  auto [tokens, targets] = fy::models::copy_task_batch(whole, 11);
  auto grads_of = [](fy::models::GptConfig c, bool average) {
    return fy::jit([c, average](std::vector<fy::Tensor> p, fy::Tensor tok, fy::Tensor tgt) {
      std::vector<fy::Tensor> g = fy::grad([&](std::vector<fy::Tensor> q) {
        return fy::models::gpt_loss(q, tok, tgt, c, std::nullopt);
      })(p);
      return average ? fy::pmean(g, "data") : g;
    });
  };
  std::vector<fy::Array> want = grads_of(whole, false).lower(params, tokens, targets).compile().run(
      [&] { std::vector<fy::Array> a = params; a.push_back(tokens); a.push_back(targets); return a; }());
  const fy::Array my_tokens = rows_of(tokens, 4 * me(), 4), my_targets = rows_of(targets, 4 * me(), 4);
  fy::Compiled dp = grads_of(part, true).lower(params, my_tokens, my_targets).compile();
  std::vector<fy::Array> args = params;
  args.push_back(my_tokens);
  args.push_back(my_targets);
  std::vector<fy::Array> got = fy::testing::run_checked(dp, args);
  EXPECT_EQ(fy::testing::high_water_mismatch(dp), "") << "process " << me();
  // The bytes the run counted as it started each exchange are the bytes the plan has, at least
  // the ring's lower bound for all-reducing the gradients once.
  int64_t gradient_bytes = 0;
  for (const fy::Array& g : want) gradient_bytes += static_cast<int64_t>(g.nbytes());
  EXPECT_EQ(dp.execution_stats().bytes_exchanged, dp.cost_analysis().bytes_exchanged);
  EXPECT_GE(dp.execution_stats().bytes_exchanged, 2 * (n() - 1) * gradient_bytes / n());
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    std::vector<float> g = got[k].to_vector<float>(), w = want[k].to_vector<float>();
    float scale = 1e-3f;
    for (float v : w) scale = std::max(scale, std::abs(v));
    for (size_t i = 0; i < w.size(); ++i)
      ASSERT_NEAR(g[i], w[i], 2e-5f * scale) << "parameter " << fy::models::gpt_param_names()[k] << " element " << i;
  }
}

// A collective inside a loop runs, and is counted, once per step; one in a cond's branch only
// where that branch runs.
TEST(DataParallel, ExchangedBytesCountEveryExchangeThatRan) {
  auto looped = fy::jit([](fy::Tensor x) {
    auto r = fy::scan([](fy::Tensor c, fy::Tensor xi) {
      fy::Tensor s = fy::psum(xi, "data");
      return std::pair{c + s, fy::Tensor{}};
    }, fy::sum(x, {0}) * 0.0, x);
    return r.carry;
  });
  const fy::Array x = fy::full({5, 64}, 1.0 + me());
  fy::Compiled c = looped.lower(x).compile();
  std::vector<fy::Array> out = fy::testing::run_checked(c, {x});
  const int64_t one = 2 * (n() - 1) * 64 * 4 / n();
  EXPECT_EQ(c.execution_stats().bytes_exchanged, 5 * one);
  EXPECT_EQ(c.cost_analysis().bytes_exchanged, 5 * one);
  EXPECT_EQ(out[0].to_vector<float>()[0], 5.0f * static_cast<float>(n() * (n() + 1) / 2));
}

}  // namespace
