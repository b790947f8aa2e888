// End to end: trace, lower, compile and run small models, checked against plain C++ loops.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "ferry/ferry.h"
#include "support/memory_check.h"

namespace fy = ferry;

namespace {

std::vector<double> random_values(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> v(n);
  for (double& x : v) x = dist(gen);
  return v;
}

// y = tanh(x @ w1 + b1) @ w2 + b2, loss = mean((y - t)^2), in f64 by hand.
double reference_mlp(const std::vector<double>& x, const std::vector<double>& w1, const std::vector<double>& b1,
                     const std::vector<double>& w2, const std::vector<double>& b2, const std::vector<double>& t,
                     int n, int d, int h, int o) {
  double loss = 0;
  for (int i = 0; i < n; ++i) {
    std::vector<double> hid(static_cast<size_t>(h));
    for (int j = 0; j < h; ++j) {
      double s = b1[static_cast<size_t>(j)];
      for (int k = 0; k < d; ++k) s += x[static_cast<size_t>(i * d + k)] * w1[static_cast<size_t>(k * h + j)];
      hid[static_cast<size_t>(j)] = std::tanh(s);
    }
    for (int j = 0; j < o; ++j) {
      double s = b2[static_cast<size_t>(j)];
      for (int k = 0; k < h; ++k) s += hid[static_cast<size_t>(k)] * w2[static_cast<size_t>(k * o + j)];
      double e = s - t[static_cast<size_t>(i * o + j)];
      loss += e * e;
    }
  }
  return loss / (n * o);
}

TEST(EndToEnd, MlpLossMatchesHandWrittenLoopsInF64) {
  const int n = 7, d = 5, h = 9, o = 3;
  auto x = random_values(n * d, 1), w1 = random_values(d * h, 2), b1 = random_values(h, 3),
       w2 = random_values(h * o, 4), b2 = random_values(o, 5), t = random_values(n * o, 6);
  auto mlp = fy::jit([](fy::Tensor x, std::vector<fy::Tensor> p, fy::Tensor t) {
    fy::Tensor y = fy::matmul(fy::tanh(fy::matmul(x, p[0]) + p[1]), p[2]) + p[3];
    return fy::mean((y - t) * (y - t));
  });
  auto arr = [](const std::vector<double>& v, fy::Shape s) { return fy::Array::from(v, s); };
  std::vector<fy::Array> params = {arr(w1, {d, h}), arr(b1, {h}), arr(w2, {h, o}), arr(b2, {o})};
  auto out = fy::testing::jit_checked(mlp, arr(x, {n, d}), params, arr(t, {n, o}));
  double want = reference_mlp(x, w1, b1, w2, b2, t, n, d, h, o);
  EXPECT_NEAR(out[0].to_vector<double>()[0], want, 1e-12);
}

TEST(EndToEnd, AttentionScoresWithBatchedDotAndSoftmax) {
  // Batched q @ k^T over heads, a numerically stable softmax, then @ v.
  const int b = 2, s = 4, dh = 3;
  auto q = random_values(b * s * dh, 7), k = random_values(b * s * dh, 8), v = random_values(b * s * dh, 9);
  auto attn = fy::jit([](fy::Tensor q, fy::Tensor k, fy::Tensor v) {
    fy::Tensor scores = fy::dot_general(q, k, {{2}, {2}, {0}, {0}}) / std::sqrt(3.0);  // [b, s, s]
    fy::Tensor m = fy::reduce_max(scores, {2});
    fy::Tensor e = fy::exp(scores - fy::broadcast_in_dim(m, {2, 4, 4}, {0, 1}));
    fy::Tensor p = e / fy::broadcast_in_dim(fy::sum(e, {2}), {2, 4, 4}, {0, 1});
    return fy::matmul(p, v);
  });
  auto arr = [](const std::vector<double>& x) { return fy::Array::from(x, {2, 4, 3}); };
  auto out = fy::testing::jit_checked(attn, arr(q), arr(k), arr(v))[0].to_vector<double>();
  for (int bi = 0; bi < b; ++bi)
    for (int i = 0; i < s; ++i) {
      std::vector<double> sc(s);
      double mx = -1e300, z = 0;
      for (int j = 0; j < s; ++j) {
        double acc = 0;
        for (int c = 0; c < dh; ++c) acc += q[(bi * s + i) * dh + c] * k[(bi * s + j) * dh + c];
        sc[j] = acc / std::sqrt(3.0);
        mx = std::max(mx, sc[j]);
      }
      for (int j = 0; j < s; ++j) z += std::exp(sc[j] - mx);
      for (int c = 0; c < dh; ++c) {
        double acc = 0;
        for (int j = 0; j < s; ++j) acc += std::exp(sc[j] - mx) / z * v[(bi * s + j) * dh + c];
        EXPECT_NEAR(out[(bi * s + i) * dh + c], acc, 1e-12);
      }
    }
}

TEST(EndToEnd, EveryDtypeFlowsThroughJit) {
  auto f = fy::jit([](fy::Tensor x) { return x * 3.0 + 1.0; });
  EXPECT_EQ(fy::testing::jit_checked(f, fy::ones({2}, fy::DType::f32))[0].to_vector<float>(), (std::vector<float>{4, 4}));
  EXPECT_EQ(fy::testing::jit_checked(f, fy::ones({2}, fy::DType::f64))[0].to_vector<double>(), (std::vector<double>{4, 4}));
  EXPECT_EQ(fy::testing::jit_checked(f, fy::ones({2}, fy::DType::f16))[0].to_vector<float>(), (std::vector<float>{4, 4}));
  EXPECT_EQ(fy::testing::jit_checked(f, fy::ones({2}, fy::DType::bf16))[0].to_vector<float>(), (std::vector<float>{4, 4}));
  EXPECT_EQ(fy::testing::jit_checked(f, fy::ones({2}, fy::DType::i32))[0].to_vector<int32_t>(), (std::vector<int32_t>{4, 4}));
  auto cmp = fy::jit([](fy::Tensor x) { return fy::where(x > 1.5, x, 0.0); });
  auto in = fy::Array::from(std::vector<float>{1, 2, 3}, {3});
  EXPECT_EQ(fy::testing::jit_checked(cmp, in)[0].to_vector<float>(), (std::vector<float>{0, 2, 3}));
  auto logical = fy::jit([](fy::Tensor x) { return fy::eq(x > 1.5, x < 2.5); });
  EXPECT_EQ(fy::testing::jit_checked(logical, in)[0].to_vector<bool>(), (std::vector<bool>{false, true, false}));
}

TEST(EndToEnd, IndexingAndMemoryKinds) {
  auto f = fy::jit([](fy::Tensor x, fy::Tensor i) {
    fy::Tensor row = fy::dynamic_slice(x, {i, fy::constant(0, {}, fy::DType::i32)}, {1, 3});
    fy::Tensor host = fy::device_put(row, fy::MemoryKind::pinned_host);
    fy::Tensor back = fy::device_put(host, fy::MemoryKind::device);
    fy::Tensor both = fy::concatenate({back, fy::slice(x, {0, 0}, {1, 3})}, 0);
    return fy::dynamic_update_slice(x, both * 10.0, {i, fy::constant(0, {}, fy::DType::i32)});
  });
  auto x = fy::Array::from(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8}, {3, 3});
  auto out = fy::testing::jit_checked(f, x, fy::Array::scalar(int32_t{1}))[0].to_vector<float>();
  EXPECT_EQ(out, (std::vector<float>{0, 1, 2, 30, 40, 50, 0, 10, 20}));
  // A start past the end is clamped so the update stays inside, as in XLA.
  auto clamped = fy::testing::jit_checked(f, x, fy::Array::scalar(int32_t{7}))[0].to_vector<float>();
  EXPECT_EQ(clamped, (std::vector<float>{0, 1, 2, 60, 70, 80, 0, 10, 20}));
}

}  // namespace
