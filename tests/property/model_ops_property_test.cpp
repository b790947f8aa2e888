// Random programs of the model operations (issue 16's primitives, nn functions, random numbers,
// cond and custom_vjp): seeded chains of them, inside scan(checkpoint(...)) under every built-in
// policy (offloading included), must give gradients bit-identical to the same chain without
// checkpoints; chains of the smooth ones must also match finite differences. A family apart from
// random_program.cpp so the main suite's seeds keep their programs.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "ferry/ferry.h"
#include "support/gradient_check.h"
#include "support/memory_check.h"

namespace fy = ferry;

namespace {

using Xs = std::vector<fy::Tensor>;

constexpr int kOps = 20;
// Ops whose gradient is smooth at almost every point a seed draws (finite differences apply).
bool smooth(int op) { return op != 3 && op != 5 && op != 15 && op != 16 && op != 19; }  // 15: a deliberately other backward

auto clipped_tanh = fy::custom_vjp([](fy::Tensor x) { return fy::tanh(x); },
                                   [](fy::Tensor x) { return std::pair{fy::tanh(x), fy::tanh(x)}; },
                                   [](fy::Tensor t, fy::Tensor g) { return fy::clamp(-0.2, g * (1.0 - t * t), 0.2); });

// op k applied to x (f64[B, D]); w (f64[D]) is a parameter some ops use.
fy::Tensor apply_op(int k, const fy::Tensor& x, const fy::Tensor& w, uint32_t salt) {
  const int64_t B = x.shape()[0];
  fy::Tensor rows = fy::rem(fy::iota(fy::DType::i32, {B}) * 3.0 + static_cast<double>(salt % 5), static_cast<double>(B));
  switch (k) {
    case 0: return fy::erf(x);
    case 1: return fy::log1p(x * x);
    case 2: return fy::expm1(fy::tanh(x));
    case 3: return fy::clamp(-0.5, x, 0.5) + x * 0.25;
    case 4: return fy::cumsum(x, 1) * 0.5;
    case 5: return fy::cummax(x, 1, (salt & 1) != 0);
    case 6: return fy::take(x, rows, 0);
    case 7: return fy::scatter_add(x, fy::reshape(rows, {B, 1}), x * 0.5, {{1}, {0}, {0}});
    case 8: return fy::nn::softmax(x * 2.0, 1);
    case 9: return fy::nn::log_softmax(x) * 0.25;
    case 10: return fy::nn::layer_norm(x, w, w * 0.5);
    case 11: return fy::nn::rms_norm(x, w);
    case 12: return fy::nn::gelu(x, false);
    case 13: return fy::nn::dropout(fy::random::fold_in(fy::random::key(salt), 3u), 0.3, x);
    case 14: return fy::cond(fy::sum(x) > 0.0, [](fy::Tensor v) { return fy::sin(v); }, [](fy::Tensor v) { return fy::cos(v) * 0.5; }, x);
    case 15: return clipped_tanh(x);
    case 16: return x - fy::broadcast_in_dim(fy::min(x, {1}), x.shape(), {0});
    case 17: return fy::nn::silu(x);
    case 18: return x - fy::broadcast_in_dim(fy::nn::logsumexp(x, {1}), x.shape(), {0});
    default: return fy::rem(x, 0.7) + x;
  }
}

struct Chain {
  std::vector<int> ops;
  uint32_t seed;
  fy::Shape shape;
};

Chain make_chain(uint32_t seed, bool smooth_only) {
  std::mt19937 rng(seed);
  Chain c{{}, seed, {2 + static_cast<int64_t>(rng() % 4), 2 + static_cast<int64_t>(rng() % 5)}};
  const int n = 2 + static_cast<int>(rng() % 4);
  while (static_cast<int>(c.ops.size()) < n) {
    int k = static_cast<int>(rng() % kOps);
    if (!smooth_only || smooth(k)) c.ops.push_back(k);
  }
  return c;
}

// sum over a 2-step scan whose step runs the chain (checkpointed by `wrap`), with names to decide on.
template <class Wrap> fy::Tensor loss(const Chain& c, const Xs& a, Wrap wrap) {
  auto step = wrap([&c](fy::Tensor h, fy::Tensor w) {
    for (size_t i = 0; i < c.ops.size(); ++i) {
      h = apply_op(c.ops[i], h, w, c.seed + static_cast<uint32_t>(i));
      if (i % 2 == 0) h = fy::checkpoint_name(h, i == 0 ? "a" : "b");
    }
    return std::pair{h, fy::Tensor()};
  });
  fy::Tensor ws = fy::broadcast_in_dim(a[1], {2, c.shape[1]}, {1});
  fy::Tensor out = fy::scan(step, a[0], ws).carry;
  return fy::sum(out * fy::sin(out + 0.3));
}

std::vector<fy::Policy> policies() {
  using namespace fy::policies;
  const fy::MemoryKind dev = fy::MemoryKind::device, host = fy::MemoryKind::pinned_host;
  return {everything_saveable, nothing_saveable, dots_saveable, dots_with_no_batch_dims_saveable,
          offload_dot_with_no_batch_dims(dev, host), save_only_these_names({"a"}), save_any_names_but_these({"b"}),
          save_and_offload_only_these_names({"a"}, {"b"}, dev, host)};
}

std::vector<std::vector<double>> grads(const Chain& c, const std::vector<fy::Array>& args,
                                       const std::function<fy::Tensor(const Xs&)>& f) {
  auto j = fy::jit([&](std::vector<fy::Tensor> xs) {
    return fy::grad([&](std::vector<fy::Tensor> q) { return f(q); })(xs);
  });
  std::vector<fy::Array> out = fy::testing::run_checked(j.lower(args).compile({.checked = true}), args);
  std::vector<std::vector<double>> r;
  for (const auto& a : out) r.push_back(a.to_vector<double>());
  return r;
}

TEST(ModelOpsProperty, CheckpointedChainsHaveTheGradientsOfThePlainChain) {
  const uint32_t first = 1, count = 24;
  for (uint32_t seed = first; seed < first + count; ++seed) {
    Chain c = make_chain(seed, false);
    SCOPED_TRACE(::testing::Message() << "seed " << seed << " ops " << ::testing::PrintToString(c.ops));
    std::vector<fy::Array> args = fy::testing::random_f64({c.shape, {c.shape[1]}}, seed, -1.5, 1.5);
    auto plain = grads(c, args, [&](const Xs& a) { return loss(c, a, [](auto f) { return f; }); });
    for (const fy::Policy& p : policies()) {
      SCOPED_TRACE(p.name());
      auto got = grads(c, args, [&](const Xs& a) { return loss(c, a, [&](auto f) { return fy::checkpoint(f, p); }); });
      ASSERT_EQ(got.size(), plain.size());
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_EQ(std::memcmp(got[i].data(), plain[i].data(), got[i].size() * sizeof(double)), 0) << "argument " << i;
    }
  }
}

TEST(ModelOpsProperty, SmoothChainsMatchFiniteDifferences) {
  for (uint32_t seed = 100; seed < 130; ++seed) {
    Chain c = make_chain(seed, true);
    SCOPED_TRACE(::testing::Message() << "seed " << seed << " ops " << ::testing::PrintToString(c.ops));
    fy::testing::expect_gradients_match([&](const Xs& a) { return loss(c, a, [](auto f) { return f; }); },
                                        fy::testing::random_f64({c.shape, {c.shape[1]}}, seed, -1.0, 1.0), 1e-6, 1e-5);
  }
}

}  // namespace
