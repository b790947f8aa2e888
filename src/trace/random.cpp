// jax.random on Threefry-2x32, with JAX's partitionable counting (jax_threefry_partitionable=True,
// the default since JAX 0.5): the numbers for element i of a shape come from encrypting the 64-bit
// counter i (high word, low word) under the key.
#include "ferry/random.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "ferry/error.h"
#include "trace/tracer.h"

namespace ferry::random {
namespace {

[[noreturn]] void invalid(const std::string& msg) { throw Error(ErrorCode::invalid_argument, msg); }

Tensor i32(double v, const Shape& shape = {}) { return constant(v, shape, DType::i32); }
// A uint32 word as the i32 with its bits.
double word(uint32_t w) { return static_cast<double>(static_cast<int32_t>(w)); }

void check_key(const Tensor& key, std::string_view op) {
  if (!key.defined()) invalid(fmt::format("random.{}: the key is an undefined Tensor", op));
  if (key.dtype() != DType::i32 || key.shape() != Shape{2})
    invalid(fmt::format("random.{}: a key is i32[2] (from random::key), got {}", op, key.type_string()));
}

void check_shape(const Shape& shape, std::string_view op) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) invalid(fmt::format("random.{}: shape {} has a negative dimension", op, shape_string(shape)));
    if (__builtin_mul_overflow(n, d, &n) || n > std::numeric_limits<int32_t>::max())
      invalid(fmt::format("random.{}: shape {} has more than 2^31 - 1 elements", op, shape_string(shape)));
  }
}

// The key's two words as scalars.
std::pair<Tensor, Tensor> words(const Tensor& key) {
  return {reshape(slice(key, {0}, {1}), {}), reshape(slice(key, {1}, {2}), {})};
}

// (y0, y1) for the counters 0 .. n-1 of `shape` (high words 0: shapes stay below 2^31 elements).
std::pair<Tensor, Tensor> counter_blocks(const Tensor& key, const Shape& shape) {
  auto [k0, k1] = words(key);
  const int64_t n = num_elements(shape);
  Tensor lo = reshape(iota(DType::i32, {n}), shape);
  return threefry2x32(k0, k1, i32(0.0, shape), lo);
}

Tensor uniform_f32(const Tensor& key, const Shape& shape, float lo, float hi) {
  // 23 random mantissa bits under the exponent of 1.0 give [1, 2); minus 1 gives [0, 1).
  Tensor b = bits(key, shape);
  Tensor mant = logical_or(shift_right_logical(b, i32(9.0, shape)), i32(word(0x3f800000u), shape));
  Tensor f = bitcast_convert_type(mant, DType::f32) - 1.0;
  Tensor lo_t = constant(lo, shape, DType::f32);
  if (lo == 0.0f && hi == 1.0f) return maximum(lo_t, f);  // f * 1 + 0 is exact
  // XLA fuses f * (hi - lo) + lo into one multiply-add (one rounding); in f64 the product is exact
  // (24 x 24 bits) and the sum is rounded twice, which agrees except at exact ties.
  const double span = static_cast<double>(hi - lo);
  Tensor scaled = convert(convert(f, DType::f64) * span + static_cast<double>(lo), DType::f32);
  return maximum(lo_t, scaled);
}

// x mod s for the uint32 bits of x and 0 < s <= 2^32, via f64 (exact below 2^53); the result's
// bits as i32.
Tensor unsigned_rem(const Tensor& x, double s) {
  const Shape shape = x.shape();
  Tensor hi = convert(shift_right_logical(x, i32(16.0, shape)), DType::f64);
  Tensor lo = convert(logical_and(x, i32(65535.0, shape)), DType::f64);
  Tensor r = rem(hi * 65536.0 + lo, s);
  Tensor wrapped = where(r >= 2147483648.0, r - 4294967296.0, r);
  return convert(wrapped, DType::i32);
}

}  // namespace

std::pair<Tensor, Tensor> threefry2x32(const Tensor& k0, const Tensor& k1, const Tensor& x0, const Tensor& x1) {
  for (const Tensor* t : {&k0, &k1, &x0, &x1})
    if (!t->defined()) invalid("random.threefry2x32: an operand is an undefined Tensor");
  std::vector<Tensor> out =
      detail::current_tracer("threefry2x32").bind(Primitive::threefry2x32, ir::NoParams{}, {k0, k1, x0, x1});
  return {out[0], out[1]};
}

Tensor key(int64_t seed) {
  const bool fits32 = seed >= std::numeric_limits<int32_t>::min() && seed <= std::numeric_limits<uint32_t>::max();
  const auto u = static_cast<uint64_t>(seed);
  const uint32_t hi = fits32 ? 0u : static_cast<uint32_t>(u >> 32), lo = static_cast<uint32_t>(u);
  return concatenate({i32(word(hi), {1}), i32(word(lo), {1})}, 0);
}

Array key_data(int64_t seed) {
  const bool fits32 = seed >= std::numeric_limits<int32_t>::min() && seed <= std::numeric_limits<uint32_t>::max();
  const auto u = static_cast<uint64_t>(seed);
  const uint32_t hi = fits32 ? 0u : static_cast<uint32_t>(u >> 32), lo = static_cast<uint32_t>(u);
  return Array::from(std::vector<int32_t>{static_cast<int32_t>(hi), static_cast<int32_t>(lo)}, {2});
}

Tensor key(const Tensor& seed) {
  if (!seed.defined() || seed.dtype() != DType::i32 || seed.rank() != 0)
    invalid(fmt::format("random.key: a traced seed is an i32 scalar, got {}",
                        seed.defined() ? seed.type_string() : "an undefined Tensor"));
  return concatenate({i32(0.0, {1}), reshape(seed, {1})}, 0);
}

Tensor split(const Tensor& key, int64_t num) {
  check_key(key, "split");
  if (num < 0) invalid(fmt::format("random.split: num must be >= 0, got {}", num));
  check_shape({num}, "split");
  auto [y0, y1] = counter_blocks(key, {num});
  return concatenate({reshape(y0, {num, 1}), reshape(y1, {num, 1})}, 1);
}

std::pair<Tensor, Tensor> split2(const Tensor& key) {
  Tensor ks = split(key, 2);
  return {key_at(ks, 0), key_at(ks, 1)};
}

Tensor key_at(const Tensor& keys, int64_t i) {
  if (!keys.defined() || keys.dtype() != DType::i32 || keys.rank() != 2 || keys.shape()[1] != 2)
    invalid(fmt::format("random.key_at: keys are i32[n,2] (from random::split), got {}",
                        keys.defined() ? keys.type_string() : "an undefined Tensor"));
  const int64_t n = keys.shape()[0];
  if (i < 0 || i >= n) invalid(fmt::format("random.key_at: index {} out of range for {} keys", i, n));
  return reshape(slice(keys, {i, 0}, {i + 1, 2}), {2});
}

Tensor fold_in(const Tensor& key, uint32_t data) {
  check_key(key, "fold_in");
  return fold_in(key, i32(word(data)));
}

Tensor fold_in(const Tensor& key, const Tensor& data) {
  check_key(key, "fold_in");
  if (!data.defined() || data.dtype() != DType::i32 || data.rank() != 0)
    invalid(fmt::format("random.fold_in: data is an i32 scalar, got {}",
                        data.defined() ? data.type_string() : "an undefined Tensor"));
  // JAX: threefry_2x32(key, threefry_seed(data)) = the block of counter (0, data).
  auto [k0, k1] = words(key);
  auto [y0, y1] = threefry2x32(k0, k1, i32(0.0), data);
  return concatenate({reshape(y0, {1}), reshape(y1, {1})}, 0);
}

Tensor bits(const Tensor& key, const Shape& shape) {
  check_key(key, "bits");
  check_shape(shape, "bits");
  auto [y0, y1] = counter_blocks(key, shape);
  return logical_xor(y0, y1);
}

Tensor uniform(const Tensor& key, const Shape& shape, DType dtype, double minval, double maxval) {
  check_key(key, "uniform");
  if (!is_floating(dtype)) invalid(fmt::format("random.uniform: needs a floating dtype, got {}", dtype_name(dtype)));
  return convert(uniform_f32(key, shape, static_cast<float>(minval), static_cast<float>(maxval)), dtype);
}

Tensor normal(const Tensor& key, const Shape& shape, DType dtype) {
  check_key(key, "normal");
  if (!is_floating(dtype)) invalid(fmt::format("random.normal: needs a floating dtype, got {}", dtype_name(dtype)));
  const float lo = std::nextafter(-1.0f, 0.0f);
  Tensor u = uniform_f32(key, shape, lo, 1.0f);
  return convert(erf_inv(u) * static_cast<double>(static_cast<float>(std::sqrt(2.0))), dtype);
}

Tensor bernoulli(const Tensor& key, double p, const Shape& shape) {
  check_key(key, "bernoulli");
  if (!(p >= 0.0 && p <= 1.0)) invalid(fmt::format("random.bernoulli: p must be in [0, 1], got {}", p));
  return uniform_f32(key, shape, 0.0f, 1.0f) < static_cast<double>(static_cast<float>(p));
}

Tensor randint(const Tensor& key, const Shape& shape, int64_t minval, int64_t maxval) {
  check_key(key, "randint");
  check_shape(shape, "randint");
  constexpr int64_t kMin = std::numeric_limits<int32_t>::min(), kMax = std::numeric_limits<int32_t>::max();
  // As JAX: bounds clipped into i32's range; a maxval above it widens the span by one.
  const bool max_out_of_range = maxval > kMax;
  const int64_t lo = std::clamp(minval, kMin, kMax), hi = std::clamp(maxval, kMin, kMax);
  double span = hi <= lo ? 1.0 : static_cast<double>(static_cast<uint32_t>(hi - lo));
  if (max_out_of_range && hi > lo) span = span + 1.0;
  auto [k1, k2] = split2(key);
  Tensor higher = bits(k1, shape), lower = bits(k2, shape);
  // multiplier = (2^16 mod span)^2 mod span, in uint32 arithmetic.
  const double m16 = std::fmod(65536.0, span);
  const double multiplier = std::fmod(static_cast<double>(static_cast<uint32_t>(static_cast<uint64_t>(m16 * m16))), span);
  Tensor offset = unsigned_rem(higher, span) * i32(word(static_cast<uint32_t>(multiplier)), shape) +
                  unsigned_rem(lower, span);
  return unsigned_rem(offset, span) + i32(static_cast<double>(lo), shape);
}

}  // namespace ferry::random
