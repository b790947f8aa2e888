// Dropout that survives recomputation: a transformer block with dropout (on the attention weights,
// the attention output and the MLP output) inside scan(checkpoint(block, policy)) gives gradients
// bit-identical to the same program without checkpoints, under every built-in policy, the
// offloading ones included. The masks come from per-layer keys (random.split, scanned as xs) and a
// key folded with the step, so a recomputed block draws exactly the forward pass's masks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "ferry/ferry.h"
#include "support/memory_check.h"

namespace fy = ferry;

namespace {

constexpr int64_t kLayers = 3, kSeq = 8, kModel = 16, kHidden = 32;

struct Weights {
  fy::Tensor wq, wk, wv, wo, w1, w2, ln_scale, ln_bias;
};

// One pre-norm block: x + dropout(attention(layer_norm(x))), then + dropout(mlp(layer_norm(.))).
fy::Tensor block(const fy::Tensor& x, const Weights& w, const fy::Tensor& key) {
  auto [k_attn, k_rest] = fy::random::split2(key);
  auto [k_out, k_mlp] = fy::random::split2(k_rest);
  fy::Tensor h = fy::nn::layer_norm(x, w.ln_scale, w.ln_bias);
  fy::Tensor q = fy::checkpoint_name(fy::matmul(h, w.wq), "q");
  fy::Tensor k = fy::matmul(h, w.wk);
  fy::Tensor v = fy::matmul(h, w.wv);
  fy::Tensor scores = fy::matmul(q, fy::transpose(k, {1, 0})) / std::sqrt(static_cast<double>(kModel));
  fy::Tensor causal = fy::iota(fy::DType::i32, {kSeq, kSeq}, 0) >= fy::iota(fy::DType::i32, {kSeq, kSeq}, 1);
  scores = fy::where(causal, scores, -1e9);
  fy::Tensor probs = fy::nn::dropout(k_attn, 0.2, fy::nn::softmax(scores));
  fy::Tensor attn = fy::checkpoint_name(fy::matmul(fy::matmul(probs, v), w.wo), "attn");
  fy::Tensor y = x + fy::nn::dropout(k_out, 0.1, attn);
  fy::Tensor m = fy::nn::gelu(fy::matmul(fy::nn::layer_norm(y), w.w1));
  return y + fy::nn::dropout(fy::random::fold_in(k_mlp, 7u), 0.1, fy::matmul(m, w.w2));
}

// loss(x, stacked weights...) with the blocks in a scan, each step wrapped by `wrap`.
template <class Wrap> fy::Tensor model_loss(const std::vector<fy::Tensor>& p, Wrap wrap) {
  fy::Tensor keys = fy::random::split(fy::random::key(2024), kLayers);  // i32[layers, 2], one per step
  std::vector<fy::Tensor> xs(p.begin() + 1, p.end());
  xs.push_back(keys);
  auto step = wrap([](fy::Tensor x, std::vector<fy::Tensor> l) {
    Weights w{l[0], l[1], l[2], l[3], l[4], l[5], l[6], l[7]};
    return std::pair{block(x, w, l[8]), fy::Tensor()};
  });
  fy::Tensor out = fy::scan(step, p[0], xs).carry;
  return fy::sum(out * out);
}

std::vector<fy::Array> arguments() {
  std::vector<fy::Shape> shapes{{kSeq, kModel},           {kLayers, kModel, kModel}, {kLayers, kModel, kModel},
                                {kLayers, kModel, kModel}, {kLayers, kModel, kModel}, {kLayers, kModel, kHidden},
                                {kLayers, kHidden, kModel}, {kLayers, kModel},        {kLayers, kModel}};
  std::vector<fy::Array> out;
  uint32_t s = 12345;
  for (const auto& shape : shapes) {
    std::vector<float> v(static_cast<size_t>(fy::num_elements(shape)));
    for (float& x : v) {
      s = s * 1664525u + 1013904223u;
      x = (static_cast<float>(s >> 8) / 16777216.0f - 0.5f) * 0.5f;
    }
    out.push_back(fy::Array::from(v, shape));
  }
  return out;
}

std::vector<std::vector<float>> gradients(const std::function<fy::Tensor(const std::vector<fy::Tensor>&)>& loss) {
  auto f = fy::jit([&](std::vector<fy::Tensor> p) {
    return fy::grad([&](std::vector<fy::Tensor> q) { return loss(q); })(p);
  });
  std::vector<fy::Array> args = arguments();
  std::vector<fy::Array> g = fy::testing::run_checked(f.lower(args).compile(), args);
  std::vector<std::vector<float>> out;
  for (const fy::Array& a : g) out.push_back(a.to_vector<float>());
  return out;
}

TEST(DropoutRemat, GradientsUnderEveryPolicyAreBitIdenticalToNoCheckpoint) {
  auto plain = gradients([](const std::vector<fy::Tensor>& p) { return model_loss(p, [](auto f) { return f; }); });
  ASSERT_EQ(plain.size(), 9u);
  for (float g : plain[0]) ASSERT_TRUE(std::isfinite(g));
  using namespace fy::policies;
  const fy::MemoryKind dev = fy::MemoryKind::device, host = fy::MemoryKind::pinned_host;
  std::vector<fy::Policy> policies{everything_saveable,
                                   nothing_saveable,
                                   dots_saveable,
                                   dots_with_no_batch_dims_saveable,
                                   offload_dot_with_no_batch_dims(dev, host),
                                   save_only_these_names({"q", "attn"}),
                                   save_any_names_but_these({"q"}),
                                   save_and_offload_only_these_names({"q"}, {"attn"}, dev, host),
                                   save_and_offload_only_these_names({}, {"q", "attn"}, dev, fy::MemoryKind::unpinned_host),
                                   save_from_both_policies(dots_saveable, save_only_these_names({"attn"}))};
  for (const fy::Policy& policy : policies) {
    SCOPED_TRACE(policy.name());
    auto got = gradients([&](const std::vector<fy::Tensor>& p) {
      return model_loss(p, [&](auto f) { return fy::checkpoint(f, policy); });
    });
    ASSERT_EQ(got.size(), plain.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].size(), plain[i].size());
      EXPECT_EQ(std::memcmp(got[i].data(), plain[i].data(), got[i].size() * sizeof(float)), 0) << "argument " << i;
    }
  }
}

TEST(DropoutRemat, RecomputedMasksAreTheForwardMasks) {
  // A block whose only use of the key is dropout: recomputing it under nothing_saveable must give
  // the gradient of the forward pass's mask, which is exactly mask / keep on x's cotangent.
  auto f = fy::jit([](fy::Tensor x) {
    return fy::grad([](fy::Tensor v) {
      auto drop = fy::checkpoint([](fy::Tensor u) { return fy::nn::dropout(fy::random::key(9), 0.5, fy::sin(u)); },
                                 fy::policies::nothing_saveable);
      return fy::sum(drop(v));
    })(x);
  });
  auto mask = fy::jit([](fy::Tensor x) { return fy::nn::dropout(fy::random::key(9), 0.5, fy::ones_like(x)); });
  fy::Array x = fy::Array::from(std::vector<float>(64, 0.25f), {64});
  std::vector<float> g = f(x)[0].to_vector<float>(), m = mask(x)[0].to_vector<float>();
  for (size_t i = 0; i < g.size(); ++i) EXPECT_EQ(g[i], m[i] * std::cos(0.25f)) << i;
}

}  // namespace
