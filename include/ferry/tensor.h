// Tensor: a value inside a function being traced, and the operations on it. Each operation records
// one equation (or a few) in the trace; shapes and dtypes are checked right away, and a mistake is
// an INVALID_ARGUMENT error naming the operation and the shapes.
//
// Binary operations broadcast like NumPy (shapes aligned on the right, size-1 dimensions stretch)
// by inserting broadcast_in_dim; C++ numbers take the tensor's dtype (`x * 2.0` stays f32).
// Operands of one operation must have the same dtype (use convert) and memory kind (device_put).
#pragma once

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

// Elementwise, unary.
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor logistic(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);

// Elementwise, binary (NumPy broadcasting; numbers take the tensor's dtype).
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor max(const Tensor& a, const Tensor& b);
Tensor max(const Tensor& a, double b);
Tensor max(double a, const Tensor& b);
Tensor min(const Tensor& a, const Tensor& b);
Tensor min(const Tensor& a, double b);
Tensor min(double a, const Tensor& b);
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

// Reductions. Without axes they reduce over every axis to a scalar.
Tensor sum(const Tensor& x);
Tensor sum(const Tensor& x, const Axes& axes);
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, const Axes& axes);
Tensor max(const Tensor& x);
Tensor reduce_max(const Tensor& x, const Axes& axes);

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
