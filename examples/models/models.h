// The models ferry's demo, benchmarks and peer comparisons run, each written once with ferry's API.
//
// scan_mlp: the JAX host-offloading tutorial's model. x f32[B,W]; per layer
//   x -> (x @ w1[l]) @ w2[l] with x tagged checkpoint_name(x, "x"), a scan over the layers;
//   loss = sum of the output; gradients with respect to (w1, w2).
// gpt: a decoder-only transformer as a scan over identical blocks (token embeddings by take,
//   pre-layer-norm, causal multi-head attention, 4x MLP with tanh-gelu, residuals, GPT-2's dropout
//   on the attention weights and on both residual branches), projections tagged query_proj,
//   key_proj, value_proj, out_proj, mlpwi, mlpwo; next-token nn::cross_entropy on a token batch.
//   Dropout keys: random::split(key, layers) gives each block (scan step) its key, which it splits
//   in three (attention weights, attention output, MLP output); a recomputed block draws the same
//   masks. bench/peers/jax_models.py computes the same model, masks included.
// Each block (scan step) is checkpointed with the given policy; no policy means no checkpoint.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <ferry/ferry.h>

namespace ferry::models {

struct ScanMlpConfig {
  int batch = 256, width = 256, hidden = 1024, layers = 10;
};

// Parameters: {w1 f32[L,W,H], w2 f32[L,H,W]}.
Tensor scan_mlp_loss(const Tensor& x, const std::vector<Tensor>& params, const std::optional<Policy>& policy);
std::vector<ShapeDtype> scan_mlp_param_specs(const ScanMlpConfig& c);
Array scan_mlp_input(const ScanMlpConfig& c, uint32_t seed);
std::vector<Array> scan_mlp_params(const ScanMlpConfig& c, uint32_t seed);

struct GptConfig {
  int vocab = 64, d_model = 256, heads = 4, seq = 128, batch = 8, layers = 8;
  double dropout = 0.1;  // 0 turns dropout off
  int64_t dropout_seed = 0;
};

// Parameters, in this order: embed [V,D], pos [S,D], then stacked per layer ([L,...]): ln1_g,
// ln1_b [L,D], wq, wk, wv, wo [L,D,D], ln2_g, ln2_b [L,D], w_in [L,D,4D], b_in [L,4D],
// w_out [L,4D,D], b_out [L,D], then ln_f_g, ln_f_b [D], unembed [D,V].
std::vector<std::string> gpt_param_names();
std::vector<ShapeDtype> gpt_param_specs(const GptConfig& c);
std::vector<Array> gpt_params(const GptConfig& c, uint32_t seed);
// tokens, targets: i32[B,S]. Mean next-token cross-entropy. `key` (i32[2], random::key) draws the
// dropout masks; without one the key is random::fold_in(random::key(c.dropout_seed), sum(tokens)),
// so each batch gets its own masks and the same batch the same ones.
Tensor gpt_loss(const std::vector<Tensor>& params, const Tensor& tokens, const Tensor& targets, const GptConfig& c,
                const std::optional<Policy>& policy, const Tensor& key = Tensor());

// The synthetic task the demo trains on: each row is a random first half followed by the same
// half again, so the second half is predictable by copying. Returns {tokens, targets}; targets are
// the next tokens (the last one wraps to the first).
std::pair<Array, Array> copy_task_batch(const GptConfig& c, uint32_t seed);

}  // namespace ferry::models
