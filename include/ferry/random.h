// Random numbers as in jax.random: counter-based Threefry-2x32 keys. A key is an ordinary traced
// value, i32[2] holding the two uint32 words of JAX's key data (ferry has no unsigned dtype: read
// the bits as uint32). The same key gives the same numbers as JAX (0.10, whose default
// jax_threefry_partitionable=True decides how split and bits count), and the same numbers every
// time it is used: a dropout mask recomputed in a checkpoint's backward pass is the mask of the
// forward pass by construction.
//
//   auto k = fy::random::key(0);                    // inside a traced function
//   auto [k1, k2] = fy::random::split2(k);
//   fy::Tensor u = fy::random::uniform(k1, {3, 4});  // f32 in [0, 1)
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "ferry/array.h"
#include "ferry/tensor.h"

namespace ferry::random {

// jax.random.key(seed) (as jax.random.key_data shows it): [seed >> 32, seed & 0xFFFFFFFF] for a
// 64-bit seed, so seeds that fit in 32 bits give [0, seed]; negative seeds in i32's range give
// [0, uint32(seed)] as JAX's default 32-bit mode does.
Tensor key(int64_t seed);
// The same key as data, to pass into a jitted function.
Array key_data(int64_t seed);
// A key from a traced i32 scalar seed (jax.random.key of a traced int32).
Tensor key(const Tensor& seed);

// jax.random.split(key, num): i32[num, 2], one key per row.
Tensor split(const Tensor& key, int64_t num = 2);
// split(key, 2) as two keys, for `auto [a, b] = split2(key)`.
std::pair<Tensor, Tensor> split2(const Tensor& key);
// Row i of split keys (i32[num, 2] -> i32[2]).
Tensor key_at(const Tensor& keys, int64_t i);
// jax.random.fold_in(key, data): a new key from a key and a 32-bit number.
Tensor fold_in(const Tensor& key, uint32_t data);
Tensor fold_in(const Tensor& key, const Tensor& data);  // a traced i32 scalar

// jax.random.bits(key, shape): i32 holding JAX's uint32 bits.
Tensor bits(const Tensor& key, const Shape& shape);
// jax.random.uniform: floats in [minval, maxval). f32 follows JAX bit for bit; other float dtypes
// are drawn as f32 and converted.
Tensor uniform(const Tensor& key, const Shape& shape, DType dtype = DType::f32, double minval = 0.0,
               double maxval = 1.0);
// jax.random.normal: standard normal, sqrt(2) * erf_inv(uniform(-1, 1)) as JAX computes it.
Tensor normal(const Tensor& key, const Shape& shape, DType dtype = DType::f32);
// jax.random.bernoulli: bool, true with probability p (uniform < p).
Tensor bernoulli(const Tensor& key, double p, const Shape& shape);
// jax.random.randint: i32 in [minval, maxval) (minval when maxval <= minval), as JAX draws it.
Tensor randint(const Tensor& key, const Shape& shape, int64_t minval, int64_t maxval);

// The block cipher itself (jax.random's threefry2x32 primitive) on i32 bit patterns; the keys may
// be scalars.
std::pair<Tensor, Tensor> threefry2x32(const Tensor& k0, const Tensor& k1, const Tensor& x0, const Tensor& x1);

}  // namespace ferry::random
