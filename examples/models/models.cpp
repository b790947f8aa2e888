#include "models.h"

#include <cmath>
#include <random>

namespace ferry::models {
namespace {

Array normal(const Shape& shape, double scale, std::mt19937& gen) {
  std::normal_distribution<float> dist(0.0f, static_cast<float>(scale));
  std::vector<float> v(static_cast<size_t>(num_elements(shape)));
  for (float& x : v) x = dist(gen);
  return Array::from(v, shape);
}

// Wraps a step function in checkpoint(policy) when there is a policy.
template <class F> auto maybe_checkpoint(F f, const std::optional<Policy>& policy) {
  return [f, policy](auto&&... args) {
    if (policy) return checkpoint(f, *policy)(args...);
    return f(args...);
  };
}

}  // namespace

// ---- scan_mlp ----

Tensor scan_mlp_loss(const Tensor& x, const std::vector<Tensor>& params, const std::optional<Policy>& policy) {
  auto layer = maybe_checkpoint(
      [](Tensor h, std::vector<Tensor> w) {
        h = checkpoint_name(h, "x");
        return std::pair{matmul(matmul(h, w[0]), w[1]), Tensor{}};
      },
      policy);
  return sum(scan(layer, x, params).carry);
}

std::vector<ShapeDtype> scan_mlp_param_specs(const ScanMlpConfig& c) {
  return {ShapeDtype{{c.layers, c.width, c.hidden}}, ShapeDtype{{c.layers, c.hidden, c.width}}};
}

Array scan_mlp_input(const ScanMlpConfig& c, uint32_t seed) {
  std::mt19937 gen(seed);
  return normal({c.batch, c.width}, 1.0, gen);
}

std::vector<Array> scan_mlp_params(const ScanMlpConfig& c, uint32_t seed) {
  std::mt19937 gen(seed + 1);
  return {normal({c.layers, c.width, c.hidden}, 1.0 / std::sqrt(c.width), gen),
          normal({c.layers, c.hidden, c.width}, 1.0 / std::sqrt(c.hidden), gen)};
}

// ---- gpt ----

std::vector<std::string> gpt_param_names() {
  return {"embed", "pos",   "ln1_g", "ln1_b", "wq",   "wk",    "wv",     "wo",     "ln2_g",
          "ln2_b", "w_in",  "b_in",  "w_out", "b_out", "ln_f_g", "ln_f_b", "unembed"};
}

std::vector<ShapeDtype> gpt_param_specs(const GptConfig& c) {
  const int64_t L = c.layers, D = c.d_model, F = 4 * c.d_model;
  return {ShapeDtype{{c.vocab, D}}, ShapeDtype{{c.seq, D}},
          ShapeDtype{{L, D}},       ShapeDtype{{L, D}},
          ShapeDtype{{L, D, D}},    ShapeDtype{{L, D, D}},
          ShapeDtype{{L, D, D}},    ShapeDtype{{L, D, D}},
          ShapeDtype{{L, D}},       ShapeDtype{{L, D}},
          ShapeDtype{{L, D, F}},    ShapeDtype{{L, F}},
          ShapeDtype{{L, F, D}},    ShapeDtype{{L, D}},
          ShapeDtype{{D}},          ShapeDtype{{D}},
          ShapeDtype{{D, c.vocab}}};
}

std::vector<Array> gpt_params(const GptConfig& c, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<Array> out;
  std::vector<std::string> names = gpt_param_names();
  std::vector<ShapeDtype> specs = gpt_param_specs(c);
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string& n = names[i];
    if (n.find("_g") != std::string::npos) out.push_back(ones(specs[i].shape));
    else if (n.find("_b") != std::string::npos) out.push_back(zeros(specs[i].shape));
    else {
      // Matrices by fan-in; the projections back into the residual stream smaller still (GPT-2).
      const Shape& sh = specs[i].shape;
      double scale = n == "embed" || n == "pos" ? 0.1 : 1.0 / std::sqrt(static_cast<double>(sh[sh.size() - 2]));
      if (n == "wo" || n == "w_out") scale /= std::sqrt(2.0 * c.layers);
      out.push_back(normal(sh, scale, gen));
    }
  }
  return out;
}

Tensor gpt_loss(const std::vector<Tensor>& p, const Tensor& tokens, const Tensor& targets, const GptConfig& c,
                const std::optional<Policy>& policy, const Tensor& key) {
  const int64_t B = c.batch, S = c.seq, D = c.d_model, H = c.heads, Dh = D / H;
  const double rate = c.dropout;
  Tensor x = take(p[0], tokens, 0) + p[1];  // [B,S,D]
  Tensor k = key.defined() ? key : random::fold_in(random::key(c.dropout_seed), sum(tokens));
  auto block = maybe_checkpoint(
      [=](Tensor h, std::vector<Tensor> w) {
        // w: ln1_g ln1_b wq wk wv wo ln2_g ln2_b w_in b_in w_out b_out (one layer's slices), then the key
        Tensor keys = random::split(w[12], 3);
        Tensor a = nn::layer_norm(h, w[0], w[1]);
        auto heads = [&](const Tensor& t) { return transpose(reshape(t, {B, S, H, Dh}), {0, 2, 1, 3}); };  // [B,H,S,Dh]
        Tensor q = heads(checkpoint_name(matmul(a, w[2]), "query_proj"));
        Tensor k = heads(checkpoint_name(matmul(a, w[3]), "key_proj"));
        Tensor v = heads(checkpoint_name(matmul(a, w[4]), "value_proj"));
        Tensor scores = dot_general(q, k, {{3}, {3}, {0, 1}, {0, 1}}) * (1.0 / std::sqrt(static_cast<double>(Dh)));
        Tensor row = iota(DType::i32, {B, H, S, S}, 2), col = iota(DType::i32, {B, H, S, S}, 3);
        scores = where(le(col, row), scores, -1e9);
        Tensor attn = nn::dropout(random::key_at(keys, 0), rate, nn::softmax(scores, 3));
        Tensor o = dot_general(attn, v, {{3}, {2}, {0, 1}, {0, 1}});  // [B,H,S,Dh]
        o = reshape(transpose(o, {0, 2, 1, 3}), {B, S, D});
        h = h + nn::dropout(random::key_at(keys, 1), rate, checkpoint_name(matmul(o, w[5]), "out_proj"));
        Tensor m = nn::layer_norm(h, w[6], w[7]);
        m = nn::gelu(checkpoint_name(matmul(m, w[8]), "mlpwi") + w[9]);
        h = h + nn::dropout(random::key_at(keys, 2), rate, checkpoint_name(matmul(m, w[10]), "mlpwo") + w[11]);
        return std::pair{h, Tensor{}};
      },
      policy);
  std::vector<Tensor> stacked(p.begin() + 2, p.begin() + 14);
  stacked.push_back(random::split(k, c.layers));  // one key per block
  x = scan(block, x, stacked).carry;
  Tensor logits = matmul(nn::layer_norm(x, p[14], p[15]), p[16]);  // [B,S,V]
  return mean(nn::cross_entropy(logits, targets));
}

std::pair<Array, Array> copy_task_batch(const GptConfig& c, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int32_t> tok(1, c.vocab - 1);
  std::vector<int32_t> tokens(static_cast<size_t>(c.batch * c.seq)), targets(tokens.size());
  const int half = c.seq / 2;
  for (int b = 0; b < c.batch; ++b) {
    int32_t* row = &tokens[static_cast<size_t>(b * c.seq)];
    for (int s = 0; s < half; ++s) row[s] = tok(gen);
    for (int s = half; s < c.seq; ++s) row[s] = row[s - half];
    for (int s = 0; s < c.seq; ++s) targets[static_cast<size_t>(b * c.seq + s)] = row[(s + 1) % c.seq];
  }
  return {Array::from(tokens, {c.batch, c.seq}), Array::from(targets, {c.batch, c.seq})};
}

}  // namespace ferry::models
