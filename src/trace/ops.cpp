// The operations on Tensor: thin front ends that broadcast, fill in parameters and bind primitives.
#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "ferry/error.h"
#include "ferry/tensor.h"
#include "trace/tracer.h"
#include "ir/type.h"

namespace ferry {
namespace {

using detail::Tracer;

[[noreturn]] void invalid(const std::string& msg) { throw Error(ErrorCode::invalid_argument, msg); }

// Operations record into the innermost active trace; operands of enclosing traces are captured
// there (see Tracer), and operands of finished or unrelated traces are rejected by bind().
Tracer& tracer_of(const Tensor& x, std::string_view op) {
  if (!x.defined()) invalid(fmt::format("{}: an operand is an undefined Tensor", op));
  return detail::current_tracer(op);
}

Tracer& active() { return detail::current_tracer("trace"); }

Tensor unary(Primitive p, const Tensor& x) {
  return tracer_of(x, primitive_name(p)).bind1(p, ir::NoParams{}, {x});
}

// Axis in [-rank, rank) to [0, rank).
int64_t normalize_axis(int64_t axis, int64_t rank, std::string_view op) {
  if (axis < -rank || axis >= rank) invalid(fmt::format("{}: axis {} is out of range for rank {}", op, axis, rank));
  return axis < 0 ? axis + rank : axis;
}

Shape broadcast_shapes(const Tensor& a, const Tensor& b, std::string_view op) {
  Shape sa = a.shape(), sb = b.shape();
  size_t r = std::max(sa.size(), sb.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - sa.size() ? 1 : sa[i - (r - sa.size())];
    int64_t db = i < r - sb.size() ? 1 : sb[i - (r - sb.size())];
    if (da != db && da != 1 && db != 1)
      invalid(fmt::format("{}: shapes {} and {} do not broadcast together", op, a.type_string(), b.type_string()));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Tensor binary(Primitive p, const Tensor& a, const Tensor& b) {
  std::string_view op = primitive_name(p);
  tracer_of(a, op);
  tracer_of(b, op);
  if (a.dtype() != b.dtype())
    invalid(fmt::format("{}: operand dtypes differ ({} and {}); convert one of them", op, a.type_string(), b.type_string()));
  Shape s = broadcast_shapes(a, b, op);
  return active().bind1(p, ir::NoParams{}, {broadcast_to(a, s), broadcast_to(b, s)});
}

// A C++ number next to a tensor takes the tensor's dtype and shape.
Tensor literal_like(const Tensor& x, double v, std::string_view op) {
  tracer_of(x, op);
  return active().bind1(Primitive::constant, ir::ConstantParams{v, x.dtype(), x.shape()}, {});
}

Tensor binary(Primitive p, const Tensor& a, double b) { return binary(p, a, literal_like(a, b, primitive_name(p))); }
Tensor binary(Primitive p, double a, const Tensor& b) { return binary(p, literal_like(b, a, primitive_name(p)), b); }

Axes all_axes(const Tensor& x) {
  Axes axes(static_cast<size_t>(x.rank()));
  std::iota(axes.begin(), axes.end(), 0);
  return axes;
}

Tensor reduce(Primitive p, const Tensor& x, const Axes& axes) {
  std::string_view op = primitive_name(p);
  tracer_of(x, op);
  Axes norm;
  for (int64_t a : axes) norm.push_back(normalize_axis(a, x.rank(), op));
  return active().bind1(p, ir::ReduceParams{norm}, {x});
}

}  // namespace

// One function per Unary line of the op table (ferry/tensor.h).
#define FERRY_UNARY_FUNCTION(id) \
  Tensor id(const Tensor& x) { return unary(Primitive::id, x); }
#include "ferry/unary_functions.inc"
#undef FERRY_UNARY_FUNCTION
Tensor logical_and(const Tensor& a, const Tensor& b) { return binary(Primitive::logical_and, a, b); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return binary(Primitive::logical_or, a, b); }
Tensor logical_xor(const Tensor& a, const Tensor& b) { return binary(Primitive::logical_xor, a, b); }
Tensor shift_left(const Tensor& x, const Tensor& amount) { return binary(Primitive::shift_left, x, amount); }
Tensor shift_right_logical(const Tensor& x, const Tensor& amount) {
  return binary(Primitive::shift_right_logical, x, amount);
}
Tensor bitcast_convert_type(const Tensor& x, DType dtype) {
  tracer_of(x, "bitcast_convert_type");
  if (x.dtype() == dtype) return x;
  return active().bind1(Primitive::bitcast_convert_type, ir::ConvertParams{dtype}, {x});
}
Tensor rem(const Tensor& a, const Tensor& b) { return binary(Primitive::rem, a, b); }
Tensor rem(const Tensor& a, double b) { return binary(Primitive::rem, a, b); }
Tensor atan2(const Tensor& a, const Tensor& b) { return binary(Primitive::atan2, a, b); }
Tensor clamp(const Tensor& lo, const Tensor& x, const Tensor& hi) {
  tracer_of(lo, "clamp");
  tracer_of(x, "clamp");
  tracer_of(hi, "clamp");
  if (lo.dtype() != x.dtype() || hi.dtype() != x.dtype())
    invalid(fmt::format("clamp: bounds {} and {} must have the operand's dtype ({})", lo.type_string(),
                        hi.type_string(), x.type_string()));
  Tensor xb = broadcast_to(x, broadcast_shapes(lo, x, "clamp"));
  xb = broadcast_to(xb, broadcast_shapes(xb, hi, "clamp"));
  return active().bind1(Primitive::clamp, ir::NoParams{}, {broadcast_to(lo, xb.shape()), xb, broadcast_to(hi, xb.shape())});
}
Tensor clamp(double lo, const Tensor& x, double hi) {
  return clamp(literal_like(x, lo, "clamp"), x, literal_like(x, hi, "clamp"));
}
Tensor stop_gradient(const Tensor& x) {
  tracer_of(x, "stop_gradient");
  return active().bind1(Primitive::stop_gradient, ir::NoParams{}, {x});
}

Tensor add(const Tensor& a, const Tensor& b) { return binary(Primitive::add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(Primitive::sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(Primitive::mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(Primitive::div, a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary(Primitive::max, a, b); }
Tensor maximum(const Tensor& a, double b) { return binary(Primitive::max, a, b); }
Tensor maximum(double a, const Tensor& b) { return binary(Primitive::max, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary(Primitive::min, a, b); }
Tensor minimum(const Tensor& a, double b) { return binary(Primitive::min, a, b); }
Tensor minimum(double a, const Tensor& b) { return binary(Primitive::min, a, b); }
Tensor max(const Tensor& a, const Tensor& b) { return maximum(a, b); }
Tensor min(const Tensor& a, const Tensor& b) { return minimum(a, b); }
Tensor pow(const Tensor& a, const Tensor& b) { return binary(Primitive::pow, a, b); }
Tensor pow(const Tensor& a, double b) { return binary(Primitive::pow, a, b); }
Tensor pow(double a, const Tensor& b) { return binary(Primitive::pow, a, b); }

Tensor eq(const Tensor& a, const Tensor& b) { return binary(Primitive::eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return binary(Primitive::ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return binary(Primitive::lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return binary(Primitive::le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return binary(Primitive::gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return binary(Primitive::ge, a, b); }

Tensor where(const Tensor& pred, const Tensor& on_true, const Tensor& on_false) {
  tracer_of(pred, "select");
  tracer_of(on_true, "select");
  tracer_of(on_false, "select");
  if (on_true.dtype() != on_false.dtype())
    invalid(fmt::format("select: branch dtypes differ ({} and {}); convert one of them", on_true.type_string(),
                        on_false.type_string()));
  Shape s = broadcast_shapes(on_true, on_false, "select");
  s = broadcast_shapes(pred, broadcast_to(on_true, s), "select");
  return active().bind1(Primitive::select, ir::NoParams{},
                              {broadcast_to(pred, s), broadcast_to(on_true, s), broadcast_to(on_false, s)});
}
Tensor where(const Tensor& pred, const Tensor& on_true, double on_false) {
  return where(pred, on_true, literal_like(on_true, on_false, "select"));
}
Tensor where(const Tensor& pred, double on_true, const Tensor& on_false) {
  return where(pred, literal_like(on_false, on_true, "select"), on_false);
}

Tensor select_n(const Tensor& which, const std::vector<Tensor>& cases) {
  tracer_of(which, "select_n");
  if (cases.empty()) invalid("select_n: needs at least one case");
  if (which.dtype() == DType::boolean) {
    if (cases.size() > 2) invalid(fmt::format("select_n: a bool selector picks from 2 cases, got {}", cases.size()));
    return cases.size() == 1 ? cases[0] : where(which, cases[1], cases[0]);
  }
  if (which.dtype() != DType::i32)
    invalid(fmt::format("select_n: the selector must be bool or i32, got {}", which.type_string()));
  // cases[n-1] where which >= n-1, then each lower case where which equals its index.
  Tensor r = cases.back();
  for (size_t i = cases.size() - 1; i-- > 0;) {
    Tensor idx = literal_like(which, static_cast<double>(i), "select_n");
    r = where(i == 0 ? le(which, idx) : eq(which, idx), cases[i], r);
  }
  return r;
}

Tensor operator-(const Tensor& x) { return neg(x); }
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, double b) { return binary(Primitive::add, a, b); }
Tensor operator-(const Tensor& a, double b) { return binary(Primitive::sub, a, b); }
Tensor operator*(const Tensor& a, double b) { return binary(Primitive::mul, a, b); }
Tensor operator/(const Tensor& a, double b) { return binary(Primitive::div, a, b); }
Tensor operator+(double a, const Tensor& b) { return binary(Primitive::add, a, b); }
Tensor operator-(double a, const Tensor& b) { return binary(Primitive::sub, a, b); }
Tensor operator*(double a, const Tensor& b) { return binary(Primitive::mul, a, b); }
Tensor operator/(double a, const Tensor& b) { return binary(Primitive::div, a, b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator<(const Tensor& a, double b) { return binary(Primitive::lt, a, b); }
Tensor operator<=(const Tensor& a, double b) { return binary(Primitive::le, a, b); }
Tensor operator>(const Tensor& a, double b) { return binary(Primitive::gt, a, b); }
Tensor operator>=(const Tensor& a, double b) { return binary(Primitive::ge, a, b); }

Tensor dot_general(const Tensor& lhs, const Tensor& rhs, const DotDims& d) {
  tracer_of(lhs, "dot_general");
  tracer_of(rhs, "dot_general");
  ir::DotGeneralParams p{{d.lhs_contracting, d.rhs_contracting, d.lhs_batch, d.rhs_batch}};
  return active().bind1(Primitive::dot_general, p, {lhs, rhs});
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  tracer_of(a, "matmul");
  tracer_of(b, "matmul");
  int64_t ra = a.rank(), rb = b.rank();
  if (ra == 0 || rb == 0)
    invalid(fmt::format("matmul: operands must have rank >= 1, got {} and {}", a.type_string(), b.type_string()));
  if (rb == 1) return dot_general(a, b, {{ra - 1}, {0}, {}, {}});
  if (ra == 1 || ra == 2 || rb == 2) {
    // No batch dims: [...a, k] x [...b, k, n] -> [...a, ...b, n]; NumPy puts b's leading dims first
    // when a is a matrix, so move them there.
    Tensor r = dot_general(a, b, {{ra - 1}, {rb - 2}, {}, {}});
    if (ra != 2 || rb == 2) return r;
    Axes perm;
    for (int64_t i = 1; i < rb - 1; ++i) perm.push_back(i);  // b's leading dims
    perm.push_back(0);                                        // a's rows
    perm.push_back(rb - 1);                                   // b's columns
    return transpose(r, perm);
  }
  if (ra != rb)
    invalid(fmt::format("matmul: batched operands must have equal rank, got {} and {}", a.type_string(), b.type_string()));
  Axes batch(static_cast<size_t>(ra - 2));
  std::iota(batch.begin(), batch.end(), 0);
  return dot_general(a, b, {{ra - 1}, {rb - 2}, batch, batch});
}


Tensor sum(const Tensor& x) {
  tracer_of(x, "reduce_sum");
  return reduce(Primitive::reduce_sum, x, all_axes(x));
}
Tensor sum(const Tensor& x, const Axes& axes) { return reduce(Primitive::reduce_sum, x, axes); }
Tensor mean(const Tensor& x) {
  tracer_of(x, "mean");
  return mean(x, all_axes(x));
}
Tensor mean(const Tensor& x, const Axes& axes) {
  tracer_of(x, "mean");
  if (!is_floating(x.dtype())) invalid(fmt::format("mean: needs a floating dtype, got {}", x.type_string()));
  Tensor s = sum(x, axes);
  Shape shape = x.shape();
  int64_t count = 1;
  for (int64_t a : axes) count *= shape[static_cast<size_t>(normalize_axis(a, x.rank(), "mean"))];
  return s / static_cast<double>(count);
}
Tensor max(const Tensor& x) {
  tracer_of(x, "reduce_max");
  return reduce(Primitive::reduce_max, x, all_axes(x));
}
Tensor reduce_max(const Tensor& x, const Axes& axes) { return reduce(Primitive::reduce_max, x, axes); }
Tensor max(const Tensor& x, const Axes& axes) { return reduce_max(x, axes); }
Tensor min(const Tensor& x) {
  tracer_of(x, "reduce_min");
  return reduce_min(x, all_axes(x));
}
Tensor reduce_min(const Tensor& x, const Axes& axes) { return reduce(Primitive::reduce_min, x, axes); }

Tensor argmax(const Tensor& x, int64_t axis) {
  tracer_of(x, "argmax");
  return active().bind1(Primitive::argmax, ir::ArgReduceParams{normalize_axis(axis, x.rank(), "argmax")}, {x});
}
Tensor argmin(const Tensor& x, int64_t axis) {
  tracer_of(x, "argmin");
  return active().bind1(Primitive::argmin, ir::ArgReduceParams{normalize_axis(axis, x.rank(), "argmin")}, {x});
}
Tensor argmax(const Tensor& x) {
  tracer_of(x, "argmax");
  return argmax(reshape(x, {-1}), 0);
}
Tensor argmin(const Tensor& x) {
  tracer_of(x, "argmin");
  return argmin(reshape(x, {-1}), 0);
}
static Tensor cumulative(Primitive p, const Tensor& x, int64_t axis, bool reverse) {
  tracer_of(x, primitive_name(p));
  return active().bind1(p, ir::CumulativeParams{normalize_axis(axis, x.rank(), primitive_name(p)), reverse}, {x});
}
Tensor cumsum(const Tensor& x, int64_t axis, bool reverse) { return cumulative(Primitive::cumsum, x, axis, reverse); }
Tensor cummax(const Tensor& x, int64_t axis, bool reverse) { return cumulative(Primitive::cummax, x, axis, reverse); }
Tensor cummin(const Tensor& x, int64_t axis, bool reverse) { return cumulative(Primitive::cummin, x, axis, reverse); }
Tensor min(const Tensor& x, const Axes& axes) { return reduce_min(x, axes); }
Tensor argsort(const Tensor& x, int64_t axis, bool descending, bool total_order) {
  tracer_of(x, "argsort");
  return active().bind1(Primitive::argsort,
                        ir::SortParams{normalize_axis(axis, x.rank(), "argsort"), descending, total_order}, {x});
}

Tensor reshape(const Tensor& x, const Shape& shape) {
  tracer_of(x, "reshape");
  // One -1 is inferred from the element count, as in NumPy.
  Shape s = shape;
  auto unknown = std::count(s.begin(), s.end(), int64_t{-1});
  if (unknown > 1) invalid(fmt::format("reshape: at most one -1 allowed in {}", shape_string(shape)));
  if (unknown == 1) {
    int64_t known = 1;
    for (int64_t d : s)
      if (d != -1) known *= d;
    int64_t n = num_elements(x.shape());
    if (known == 0 || n % known != 0)
      invalid(fmt::format("reshape: cannot reshape {} to {}", x.type_string(), shape_string(shape)));
    *std::find(s.begin(), s.end(), int64_t{-1}) = n / known;
  }
  return active().bind1(Primitive::reshape, ir::ReshapeParams{s}, {x});
}

Tensor transpose(const Tensor& x, const Axes& permutation) {
  tracer_of(x, "transpose");
  return active().bind1(Primitive::transpose, ir::TransposeParams{permutation}, {x});
}

Tensor broadcast_in_dim(const Tensor& x, const Shape& shape, const Axes& broadcast_dimensions) {
  tracer_of(x, "broadcast_in_dim");
  return active().bind1(Primitive::broadcast_in_dim, ir::BroadcastInDimParams{shape, broadcast_dimensions}, {x});
}

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  tracer_of(x, "broadcast_to");
  Shape s = x.shape();
  if (s == shape) return x;
  if (s.size() > shape.size())
    invalid(fmt::format("broadcast_to: cannot broadcast {} to {}", x.type_string(), shape_string(shape)));
  Axes dims(s.size());
  std::iota(dims.begin(), dims.end(), static_cast<int64_t>(shape.size() - s.size()));
  return broadcast_in_dim(x, shape, dims);
}

Tensor slice(const Tensor& x, const Axes& start, const Axes& limit, const Axes& strides) {
  tracer_of(x, "slice");
  return active().bind1(Primitive::slice, ir::SliceParams{start, limit, strides}, {x});
}

Tensor dynamic_slice(const Tensor& x, const std::vector<Tensor>& starts, const Shape& sizes) {
  tracer_of(x, "dynamic_slice");
  std::vector<Tensor> ins{x};
  ins.insert(ins.end(), starts.begin(), starts.end());
  return active().bind1(Primitive::dynamic_slice, ir::DynamicSliceParams{sizes}, ins);
}

Tensor dynamic_update_slice(const Tensor& x, const Tensor& update, const std::vector<Tensor>& starts) {
  tracer_of(x, "dynamic_update_slice");
  std::vector<Tensor> ins{x, update};
  ins.insert(ins.end(), starts.begin(), starts.end());
  return active().bind1(Primitive::dynamic_update_slice, ir::NoParams{}, ins);
}

Tensor concatenate(const std::vector<Tensor>& xs, int64_t dimension) {
  if (xs.empty()) invalid("concatenate: needs at least one operand");
  tracer_of(xs[0], "concatenate");
  int64_t d = normalize_axis(dimension, xs[0].rank(), "concatenate");
  return active().bind1(Primitive::concatenate, ir::ConcatenateParams{d}, xs);
}

Tensor iota(DType dtype, const Shape& shape, int64_t dimension) {
  ir::check_dtype(dtype, "iota");
  return detail::current_tracer("iota").bind1(Primitive::iota, ir::IotaParams{dtype, shape, dimension}, {});
}

Tensor constant(double value, const Shape& shape, DType dtype) {
  ir::check_dtype(dtype, "constant");
  return detail::current_tracer("constant").bind1(Primitive::constant, ir::ConstantParams{value, dtype, shape}, {});
}

Tensor full_like(const Tensor& x, double value) { return literal_like(x, value, "full_like"); }
// Zeros in x's memory kind: a cotangent has its primal's type, and constants are made on the device.
Tensor zeros_like(const Tensor& x) {
  Tensor z = full_like(x, 0.0);
  return x.memory_kind() == MemoryKind::device ? z : device_put(z, x.memory_kind());
}
Tensor ones_like(const Tensor& x) { return full_like(x, 1.0); }

Tensor convert(const Tensor& x, DType dtype) {
  tracer_of(x, "convert_element_type");
  ir::check_dtype(dtype, "convert_element_type");
  if (x.dtype() == dtype) return x;
  return active().bind1(Primitive::convert_element_type, ir::ConvertParams{dtype}, {x});
}

Tensor device_put(const Tensor& x, MemoryKind kind) {
  tracer_of(x, "device_put");
  ir::check_memory_kind(kind, "device_put");
  if (x.memory_kind() == kind) return x;
  return active().bind1(Primitive::device_put, ir::DevicePutParams{kind}, {x});
}

}  // namespace ferry
