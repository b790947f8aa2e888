// Tensor: a value inside a function being traced, and the operations on it. Each operation records
// one equation (or a few) in the trace; shapes and dtypes are checked right away, and a mistake is
// an INVALID_ARGUMENT error naming the operation and the shapes.
//
// Binary operations broadcast like NumPy (shapes aligned on the right, size-1 dimensions stretch)
// by inserting broadcast_in_dim; C++ numbers take the tensor's dtype (`x * 2.0` stays f32).
// Operands of one operation must have the same dtype (use convert) and memory kind (device_put).
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ferry/primitive.h"
#include "ferry/types.h"

namespace ferry {

namespace detail {
class Tracer;
}

class Tensor {
 public:
  Tensor() = default;  // undefined: "no value" (e.g. no per-step output of a scan body)
  Tensor(std::shared_ptr<detail::Tracer> tracer, int32_t id) : tracer_(std::move(tracer)), id_(id) {}

  bool defined() const { return tracer_ != nullptr; }
  DType dtype() const;
  Shape shape() const;
  int64_t rank() const;
  MemoryKind memory_kind() const;
  // "f32[2,3]"
  std::string type_string() const;

  const std::shared_ptr<detail::Tracer>& tracer() const { return tracer_; }
  int32_t id() const { return id_; }

 private:
  std::shared_ptr<detail::Tracer> tracer_;
  int32_t id_ = -1;
};

using Axes = std::vector<int64_t>;

// Dimension numbers of dot_general, as in XLA: output is [batch..., lhs free..., rhs free...].
struct DotDims {
  Axes lhs_contracting, rhs_contracting, lhs_batch, rhs_batch;
};

// Elementwise, unary: one function per Unary line of the op table (src/ir/ops.def), named as its
// primitive: Tensor exp(const Tensor& x), and likewise neg, log, sin, tanh, logistic, sqrt, rsqrt,
// abs, sign, erf, erf_inv, log1p, expm1, floor, round, logical_not and the rest. The whole list,
// with each line's comment, is generated into ferry/unary_functions.inc (beside ferry/primitive.h
// where ferry is installed).
#define FERRY_UNARY_FUNCTION(id) Tensor id(const Tensor& x);
#include "ferry/unary_functions.inc"
#undef FERRY_UNARY_FUNCTION
// Logical on bool, bitwise on i32 (jax.lax.and_, or_, xor).
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_xor(const Tensor& a, const Tensor& b);
// Shifts of i32 bit patterns; amounts outside [0, 32) give 0.
Tensor shift_left(const Tensor& x, const Tensor& amount);
Tensor shift_right_logical(const Tensor& x, const Tensor& amount);
// The same bits read as another dtype of the same width (i32 <-> f32).
Tensor bitcast_convert_type(const Tensor& x, DType dtype);
// Remainder with the sign of the dividend (C fmod, jax.lax.rem; jnp.remainder differs for
// negative operands). i32 remainder by zero gives the dividend.
Tensor rem(const Tensor& a, const Tensor& b);
Tensor rem(const Tensor& a, double b);
// The angle of the point (b, a), in [-pi, pi] (jnp.arctan2(a, b)); floating operands only.
Tensor atan2(const Tensor& a, const Tensor& b);
// min(max(x, lo), hi) (jax.lax.clamp's argument order); lo and hi broadcast to x.
Tensor clamp(const Tensor& lo, const Tensor& x, const Tensor& hi);
Tensor clamp(double lo, const Tensor& x, double hi);
// stop_gradient(x) is x, and no cotangent flows back through it (jax.lax.stop_gradient).
Tensor stop_gradient(const Tensor& x);

// Elementwise, binary (NumPy broadcasting; numbers take the tensor's dtype).
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
// Elementwise max and min (jnp.maximum, jnp.minimum; NaN wins).
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, double b);
Tensor maximum(double a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, double b);
Tensor minimum(double a, const Tensor& b);
// max/min of two tensors are elementwise too. With a number the number must be floating-point
// (max(x, 0.0)): max(x, {1}) and max(x, Axes{1}) reduce over axis 1 as jnp.max(x, 1) does (see
// Reductions), and an integer as in max(x, 1) does not compile rather than guess which was meant.
Tensor max(const Tensor& a, const Tensor& b);
Tensor min(const Tensor& a, const Tensor& b);
template <std::floating_point S> Tensor max(const Tensor& a, S b) { return maximum(a, static_cast<double>(b)); }
template <std::floating_point S> Tensor max(S a, const Tensor& b) { return maximum(static_cast<double>(a), b); }
template <std::floating_point S> Tensor min(const Tensor& a, S b) { return minimum(a, static_cast<double>(b)); }
template <std::floating_point S> Tensor min(S a, const Tensor& b) { return minimum(static_cast<double>(a), b); }
Tensor pow(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, double b);
Tensor pow(double a, const Tensor& b);

// Comparisons give bool tensors.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);

// where(pred, on_true, on_false): pred is bool; the three broadcast together.
Tensor where(const Tensor& pred, const Tensor& on_true, const Tensor& on_false);
Tensor where(const Tensor& pred, const Tensor& on_true, double on_false);
Tensor where(const Tensor& pred, double on_true, const Tensor& on_false);
// select_n(which, cases) as jax.lax.select_n: cases[which] elementwise; `which` is bool (two cases)
// or i32 (clamped into [0, n)); all broadcast together.
Tensor select_n(const Tensor& which, const std::vector<Tensor>& cases);

Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, double b);
Tensor operator<=(const Tensor& a, double b);
Tensor operator>(const Tensor& a, double b);
Tensor operator>=(const Tensor& a, double b);

// Linear algebra.
Tensor dot_general(const Tensor& lhs, const Tensor& rhs, const DotDims& dims);
// NumPy matmul for rank >= 1: contracts the last axis of a with the second-to-last of b (the last
// if b is a vector); leading dimensions are batch dimensions and must match.
Tensor matmul(const Tensor& a, const Tensor& b);

// Reductions (jnp.sum, jnp.mean, jnp.max, jnp.min with axis=axes). Without axes they reduce over
// every axis to a scalar. The result drops the reduced axes.
Tensor sum(const Tensor& x);
Tensor sum(const Tensor& x, const Axes& axes);
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, const Axes& axes);
Tensor max(const Tensor& x);
Tensor max(const Tensor& x, const Axes& axes);
Tensor min(const Tensor& x);
Tensor min(const Tensor& x, const Axes& axes);
Tensor reduce_max(const Tensor& x, const Axes& axes);  // = max(x, axes)
Tensor reduce_min(const Tensor& x, const Axes& axes);  // = min(x, axes)
// Index (i32) of the first maximum / minimum along `axis` (jnp.argmax; NaN counts as the maximum
// and as the minimum, as in JAX). The result drops the axis.
Tensor argmax(const Tensor& x, int64_t axis);
Tensor argmin(const Tensor& x, int64_t axis);
// Without an axis: the index into the flattened x (jnp.argmax(x)).
Tensor argmax(const Tensor& x);
Tensor argmin(const Tensor& x);
// Inclusive running sum / max / min along `axis` (jax.lax.cumsum, cummax, cummin).
Tensor cumsum(const Tensor& x, int64_t axis, bool reverse = false);
Tensor cummax(const Tensor& x, int64_t axis, bool reverse = false);
Tensor cummin(const Tensor& x, int64_t axis, bool reverse = false);
// The i32 positions along `axis` that sort each line (jnp.argsort(x, axis, stable=True,
// descending=...)), in jax.lax.sort's order: -inf < ... < -0 = +0 < ... < inf < NaN (every NaN
// equal), false < true. Equal elements keep their order, ascending or descending. With
// `total_order`, floats compare in IEEE's total order (-NaN < -inf < ... < -0 < +0 < ... < NaN), as
// jax.lax.top_k compares them. Its gradient is zero; the
// values it orders carry theirs through take_along_axis (ferry/gather.h's sort).
Tensor argsort(const Tensor& x, int64_t axis = -1, bool descending = false, bool total_order = false);

// Shape.
Tensor reshape(const Tensor& x, const Shape& shape);
Tensor transpose(const Tensor& x, const Axes& permutation);
Tensor broadcast_in_dim(const Tensor& x, const Shape& shape, const Axes& broadcast_dimensions);
// NumPy-style broadcast to `shape`.
Tensor broadcast_to(const Tensor& x, const Shape& shape);

// Indexing (jax.lax signatures). Dynamic starts are scalar i32 tensors, clamped into range.
Tensor slice(const Tensor& x, const Axes& start, const Axes& limit, const Axes& strides = {});
Tensor dynamic_slice(const Tensor& x, const std::vector<Tensor>& starts, const Shape& sizes);
Tensor dynamic_update_slice(const Tensor& x, const Tensor& update, const std::vector<Tensor>& starts);
Tensor concatenate(const std::vector<Tensor>& xs, int64_t dimension);

// Values with no inputs; they join the innermost active trace.
Tensor iota(DType dtype, const Shape& shape, int64_t dimension = 0);
// `shape` filled with `value`.
Tensor constant(double value, const Shape& shape = {}, DType dtype = DType::f32);
Tensor full_like(const Tensor& x, double value);
Tensor zeros_like(const Tensor& x);  // in x's memory kind (a cotangent of x has x's type)
Tensor ones_like(const Tensor& x);

Tensor convert(const Tensor& x, DType dtype);
// A copy of x in another memory kind.
Tensor device_put(const Tensor& x, MemoryKind kind);

}  // namespace ferry
