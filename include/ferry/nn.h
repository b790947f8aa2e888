// Neural-network functions as in jax.nn (and optax's cross entropy), in numerically stable forms,
// built from ferry's primitives so they differentiate, checkpoint and recompute like any other
// operation.
#pragma once

#include "ferry/tensor.h"

namespace ferry::nn {

// max(x, 0); the gradient at 0 is 0 (as jax.nn.relu).
Tensor relu(const Tensor& x);
// jax.nn.gelu: with `approximate` (the default, as in JAX) 0.5 x (1 + tanh(sqrt(2/pi) (x +
// 0.044715 x^3))), else the exact x Phi(x) = x (1 + erf(x / sqrt 2)) / 2.
Tensor gelu(const Tensor& x, bool approximate = true);
// x * logistic(x).
Tensor silu(const Tensor& x);
// exp(x - max) / sum(exp(x - max)) along `axis`; the max is held constant (stop_gradient), as JAX.
Tensor softmax(const Tensor& x, int64_t axis = -1);
Tensor log_softmax(const Tensor& x, int64_t axis = -1);
// log(sum(exp(x))) over `axes` (all when empty), stable for large and infinite entries; the result
// drops the axes (jax.nn.logsumexp with keepdims=False).
Tensor logsumexp(const Tensor& x, const Axes& axes = {});
// (x - mean) / sqrt(var + eps) over the last axis, times `scale` plus `bias` (each of the last
// axis' size; an undefined Tensor skips it).
Tensor layer_norm(const Tensor& x, const Tensor& scale = Tensor(), const Tensor& bias = Tensor(), double eps = 1e-5);
// x / sqrt(mean(x^2) + eps) over the last axis, times `scale` (undefined: none).
Tensor rms_norm(const Tensor& x, const Tensor& scale = Tensor(), double eps = 1e-6);
// Per-example cross entropy of logits [..., classes] and i32 labels [...]: logsumexp(logits) -
// logits[label] (optax.softmax_cross_entropy_with_integer_labels); take the mean for a loss. As
// there (jnp.take_along_axis), a label in [-classes, 0) counts from the end and one outside
// [-classes, classes) gives NaN.
Tensor cross_entropy(const Tensor& logits, const Tensor& labels);
// Inverted dropout (flax's): each element is kept with probability 1 - rate and scaled by
// 1 / (1 - rate), or set to 0. The mask comes from `key` (random.h), so a recomputation draws the
// same mask. rate 0 returns x; rate 1 gives zeros.
Tensor dropout(const Tensor& key, double rate, const Tensor& x);

}  // namespace ferry::nn
