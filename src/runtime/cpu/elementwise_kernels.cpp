// Elementwise kernels: unary math, binary arithmetic, comparisons and select. Operands and result
// have the same number of elements (the tracer inserts broadcast_in_dim), except that an operand of a
// binary op, comparison or select may be rank-0: it is read with stride 0 (the simplify pass leaves
// scalars unbroadcast). Loops are plain so the compiler vectorises them, one instantiation per
// combination of strides; f16 and bf16 are widened to float a chunk at a time, computed, and rounded
// once per result. f32 transcendentals and pow go through SLEEF (vector_math.h, within 1 ulp; libm's
// scalar calls were the bulk of these kernels' time). Every kernel splits its elements into tiles
// (tiles.h) that parallel_for spreads over the threads.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/cpu/check.h"
#include "runtime/cpu/dtype_dispatch.h"
#include "runtime/cpu/erf_inv.h"
#include "runtime/cpu/kernel_groups.h"
#include "runtime/cpu/tiles.h"
#include "runtime/cpu/vector_math.h"

namespace ferry::runtime::cpu {
namespace {

constexpr int64_t kChunk = 256;

template <class T, class Op> void map1(const T* x, T* y, int64_t n, Op op) {
  if constexpr (is_half_v<T>) {
    float a[kChunk];
    for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
      const int64_t m = std::min(kChunk, n - i0);
      for (int64_t j = 0; j < m; ++j) a[j] = load(x[i0 + j]);
      for (int64_t j = 0; j < m; ++j) a[j] = op(a[j]);
      for (int64_t j = 0; j < m; ++j) y[i0 + j] = store<T>(a[j]);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = op(x[i]);
  }
}

// Operand strides are compile-time (SX, SZ: 1 reads element i, 0 reads element 0 every time) so
// that each combination vectorises like the plain loop.
template <int SX, int SZ, class T, class R, class Op> void map2_strided(const T* x, const T* z, R* y, int64_t n, Op op) {
  if constexpr (is_half_v<T>) {
    using Out = decltype(op(0.0f, 0.0f));
    float a[kChunk], b[kChunk];
    Out c[kChunk];
    for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
      const int64_t m = std::min(kChunk, n - i0);
      for (int64_t j = 0; j < m; ++j) a[j] = load(x[(i0 + j) * SX]);
      for (int64_t j = 0; j < m; ++j) b[j] = load(z[(i0 + j) * SZ]);
      for (int64_t j = 0; j < m; ++j) c[j] = op(a[j], b[j]);
      for (int64_t j = 0; j < m; ++j) y[i0 + j] = store<R>(c[j]);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = op(x[i * SX], z[i * SZ]);
  }
}

// y[i] = op(x[i], z[i]); an operand with one element (`x_scalar`, `z_scalar`) is read at stride 0.
template <class T, class R, class Op>
void map2(const T* x, bool x_scalar, const T* z, bool z_scalar, R* y, int64_t n, Op op) {
  if (x_scalar && z_scalar) return map2_strided<0, 0>(x, z, y, n, op);
  if (x_scalar) return map2_strided<0, 1>(x, z, y, n, op);
  if (z_scalar) return map2_strided<1, 0>(x, z, y, n, op);
  map2_strided<1, 1>(x, z, y, n, op);
}

// Two's-complement wrap-around, as XLA does, without signed-overflow UB.
inline int32_t wrap(uint32_t v) { return static_cast<int32_t>(v); }
inline uint32_t u(int32_t v) { return static_cast<uint32_t>(v); }

// i32 division truncates toward zero. Division by zero gives -1 and INT_MIN / -1 gives INT_MIN
// (XLA's CPU and GPU results); neither traps.
inline int32_t int_div(int32_t a, int32_t b) {
  if (b == 0) return -1;
  if (b == -1) return wrap(0u - u(a));
  return a / b;
}

// Remainder with the dividend's sign; by zero gives the dividend and INT_MIN % -1 gives 0 (XLA's
// results), neither traps.
inline int32_t int_rem(int32_t a, int32_t b) {
  if (b == 0) return a;
  if (b == -1) return 0;
  return a % b;
}

// Exponentiation by squaring, wrapping on overflow. A negative exponent gives the truncated
// quotient 1 / a^-b: 1 for a == 1, +-1 for a == -1, 0 otherwise (also for a == 0).
inline int32_t int_pow(int32_t a, int32_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  uint32_t r = 1, base = u(a);
  for (uint32_t e = u(b); e != 0; e >>= 1) {
    if (e & 1u) r *= base;
    base *= base;
  }
  return wrap(r);
}

// max/min propagate NaN from either side, as XLA does.
template <class C> inline C max_nan(C a, C b) { return ((a > b) | (a != a)) ? a : b; }
template <class C> inline C min_nan(C a, C b) { return ((a < b) | (a != a)) ? a : b; }

template <class T> void unary_float(const ir::Equation& eq, const T* x, T* y, int64_t n) {
  using C = compute_t<T>;
  using P = Primitive;
  if constexpr (std::is_same_v<T, float>) {
    vmath::Fn fn;
    if (vmath::vector_fn(eq.prim, fn)) return vmath::apply(fn, x, y, n);
  }
  switch (eq.prim) {
#define FERRY_CPU_UNARY(id, scalar) \
  case P::id: return map1(x, y, n, [](C v) { return scalar; });
#include "runtime/cpu/unary_math.def"
    default: kernel_bug(eq, "not a unary primitive");
  }
}

void unary_int(const ir::Equation& eq, const int32_t* x, int32_t* y, int64_t n) {
  using P = Primitive;
  switch (eq.prim) {
    case P::neg: return map1(x, y, n, [](int32_t v) { return wrap(0u - u(v)); });
    case P::abs: return map1(x, y, n, [](int32_t v) { return v < 0 ? wrap(0u - u(v)) : v; });  // |INT_MIN| wraps
    case P::sign: return map1(x, y, n, [](int32_t v) { return int32_t{v > 0} - int32_t{v < 0}; });
    case P::logical_not: return map1(x, y, n, [](int32_t v) { return ~v; });
    default: unsupported_dtype(eq, DType::i32);
  }
}

template <class T>
void binary_float(const ir::Equation& eq, const T* a, bool sa, const T* b, bool sb, T* y, int64_t n) {
  using C = compute_t<T>;
  using P = Primitive;
  switch (eq.prim) {
    case P::add: return map2(a, sa, b, sb, y, n, [](C p, C q) { return p + q; });
    case P::sub: return map2(a, sa, b, sb, y, n, [](C p, C q) { return p - q; });
    case P::mul: return map2(a, sa, b, sb, y, n, [](C p, C q) { return p * q; });
    case P::div: return map2(a, sa, b, sb, y, n, [](C p, C q) { return p / q; });
    case P::max: return map2(a, sa, b, sb, y, n, [](C p, C q) { return max_nan(p, q); });
    case P::min: return map2(a, sa, b, sb, y, n, [](C p, C q) { return min_nan(p, q); });
    case P::pow:
      if constexpr (std::is_same_v<T, float>) return vmath::pow(a, sa, b, sb, y, n);
      else return map2(a, sa, b, sb, y, n, [](C p, C q) { return std::pow(p, q); });
    case P::rem: return map2(a, sa, b, sb, y, n, [](C p, C q) { return std::fmod(p, q); });
    case P::atan2: return map2(a, sa, b, sb, y, n, [](C p, C q) { return std::atan2(p, q); });
    default: kernel_bug(eq, "not a binary primitive");
  }
}

void binary_int(const ir::Equation& eq, const int32_t* a, bool sa, const int32_t* b, bool sb, int32_t* y, int64_t n) {
  using P = Primitive;
  switch (eq.prim) {
    case P::add: return map2(a, sa, b, sb, y, n, [](int32_t p, int32_t q) { return wrap(u(p) + u(q)); });
    case P::sub: return map2(a, sa, b, sb, y, n, [](int32_t p, int32_t q) { return wrap(u(p) - u(q)); });
    case P::mul: return map2(a, sa, b, sb, y, n, [](int32_t p, int32_t q) { return wrap(u(p) * u(q)); });
    case P::div: return map2(a, sa, b, sb, y, n, int_div);
    case P::max: return map2(a, sa, b, sb, y, n, [](int32_t p, int32_t q) { return std::max(p, q); });
    case P::min: return map2(a, sa, b, sb, y, n, [](int32_t p, int32_t q) { return std::min(p, q); });
    case P::pow: return map2(a, sa, b, sb, y, n, int_pow);
    case P::rem: return map2(a, sa, b, sb, y, n, int_rem);
    case P::logical_and: return map2(a, sa, b, sb, y, n, [](int32_t p, int32_t q) { return p & q; });
    case P::logical_or: return map2(a, sa, b, sb, y, n, [](int32_t p, int32_t q) { return p | q; });
    case P::logical_xor: return map2(a, sa, b, sb, y, n, [](int32_t p, int32_t q) { return p ^ q; });
    case P::shift_left:
      return map2(a, sa, b, sb, y, n, [](int32_t p, int32_t q) { return u(q) < 32u ? wrap(u(p) << u(q)) : 0; });
    case P::shift_right_logical:
      return map2(a, sa, b, sb, y, n, [](int32_t p, int32_t q) { return u(q) < 32u ? wrap(u(p) >> u(q)) : 0; });
    default: kernel_bug(eq, "not a binary primitive");
  }
}

// bool arithmetic as in XLA's PRED: add and max are "or", mul and min are "and".
void binary_bool(const ir::Equation& eq, const uint8_t* a, bool sa, const uint8_t* b, bool sb, uint8_t* y, int64_t n) {
  using P = Primitive;
  switch (eq.prim) {
    case P::add: case P::max: return map2(a, sa, b, sb, y, n, [](uint8_t p, uint8_t q) { return uint8_t((p != 0) | (q != 0)); });
    case P::mul: case P::min: case P::logical_and:
      return map2(a, sa, b, sb, y, n, [](uint8_t p, uint8_t q) { return uint8_t((p != 0) & (q != 0)); });
    case P::logical_or: return map2(a, sa, b, sb, y, n, [](uint8_t p, uint8_t q) { return uint8_t((p != 0) | (q != 0)); });
    case P::logical_xor: return map2(a, sa, b, sb, y, n, [](uint8_t p, uint8_t q) { return uint8_t((p != 0) ^ (q != 0)); });
    default: unsupported_dtype(eq, DType::boolean);
  }
}

template <class T>
void compare_typed(const ir::Equation& eq, const T* a, bool sa, const T* b, bool sb, bool* y, int64_t n) {
  using C = compute_t<T>;
  using P = Primitive;
  switch (eq.prim) {
    case P::eq: return map2(a, sa, b, sb, y, n, [](C p, C q) { return p == q; });
    case P::ne: return map2(a, sa, b, sb, y, n, [](C p, C q) { return p != q; });
    case P::lt: return map2(a, sa, b, sb, y, n, [](C p, C q) { return p < q; });
    case P::le: return map2(a, sa, b, sb, y, n, [](C p, C q) { return p <= q; });
    case P::gt: return map2(a, sa, b, sb, y, n, [](C p, C q) { return p > q; });
    case P::ge: return map2(a, sa, b, sb, y, n, [](C p, C q) { return p >= q; });
    default: kernel_bug(eq, "not a comparison");
  }
}

void expect_same_count(const ir::Equation& eq, std::span<const ConstView> inputs, const MutView& out) {
  const int64_t n = out.type->num_elements();
  for (const ConstView& in : inputs)
    if (in.type->num_elements() != n)
      kernel_bug(eq, fmt::format("operand {} and result {} differ in size", ir::to_string(*in.type),
                                 ir::to_string(*out.type)));
}

// As expect_same_count, but a rank-0 operand (read with stride 0) is allowed too.
void expect_same_count_or_scalar(const ir::Equation& eq, std::span<const ConstView> inputs, const MutView& out) {
  const int64_t n = out.type->num_elements();
  for (const ConstView& in : inputs)
    if (in.type->num_elements() != n && in.type->rank() != 0)
      kernel_bug(eq, fmt::format("operand {} is neither rank-0 nor the size of the result {}", ir::to_string(*in.type),
                                 ir::to_string(*out.type)));
}

bool is_scalar(const ConstView& v) { return v.type->num_elements() == 1; }

// The stride pattern is a template argument for the same reason as in map2.
template <int SP, int ST, int SF, class E>
void select_strided(const uint8_t* p, const E* t, const E* f, E* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = p[i * SP] ? t[i * ST] : f[i * SF];
}

template <class E> void select_typed(const uint8_t* p, bool sp, const E* t, bool st, const E* f, bool sf, E* y, int64_t n) {
  if (sp && n > 1 && !st && !sf) {  // one predicate for all: a plain copy of one branch
    std::memcpy(y, p[0] ? t : f, static_cast<size_t>(n) * sizeof(E));
    return;
  }
  switch ((sp ? 4 : 0) | (st ? 2 : 0) | (sf ? 1 : 0)) {
    case 0: return select_strided<1, 1, 1>(p, t, f, y, n);
    case 1: return select_strided<1, 1, 0>(p, t, f, y, n);
    case 2: return select_strided<1, 0, 1>(p, t, f, y, n);
    case 3: return select_strided<1, 0, 0>(p, t, f, y, n);
    case 4: return select_strided<0, 1, 1>(p, t, f, y, n);
    case 5: return select_strided<0, 1, 0>(p, t, f, y, n);
    case 6: return select_strided<0, 0, 1>(p, t, f, y, n);
    default: return select_strided<0, 0, 0>(p, t, f, y, n);
  }
}

}  // namespace

void unary_kernel(const ir::Equation& eq, std::span<const ConstView> inputs,
                  std::span<const MutView> outputs, Workspace& workspace) {
  expect_arity(eq, inputs, outputs, 1);
  expect_same_count(eq, inputs, outputs[0]);
  const DType t = inputs[0].type->dtype;
  if (outputs[0].type->dtype != t) kernel_bug(eq, "result dtype differs from the operand's");
  visit_dtype(t, [&]<class T>(TypeTag<T>) {
    if constexpr (std::is_same_v<T, bool>)
      if (eq.prim != Primitive::logical_not) unsupported_dtype(eq, t);
    for_each_tile(outputs[0].type->num_elements(), [&](int64_t b, int64_t e) {
      if constexpr (is_float_v<T>) unary_float(eq, inputs[0].as<T>() + b, outputs[0].as<T>() + b, e - b);
      else if constexpr (std::is_same_v<T, int32_t>) unary_int(eq, inputs[0].as<T>() + b, outputs[0].as<T>() + b, e - b);
      else map1(inputs[0].as<uint8_t>() + b, outputs[0].as<uint8_t>() + b, e - b, [](uint8_t v) { return uint8_t(v == 0); });
    });
  });
}

void binary_kernel(const ir::Equation& eq, std::span<const ConstView> inputs,
                   std::span<const MutView> outputs, Workspace& workspace) {
  expect_arity(eq, inputs, outputs, 2);
  expect_same_count_or_scalar(eq, inputs, outputs[0]);
  const DType t = inputs[0].type->dtype;
  if (inputs[1].type->dtype != t || outputs[0].type->dtype != t) kernel_bug(eq, "operand dtypes differ");
  const bool sa = is_scalar(inputs[0]), sb = is_scalar(inputs[1]);
  visit_dtype(t, [&]<class T>(TypeTag<T>) {
    for_each_tile(outputs[0].type->num_elements(), [&](int64_t i, int64_t e) {
      const int64_t ia = sa ? 0 : i, ib = sb ? 0 : i;
      if constexpr (is_float_v<T>)
        binary_float(eq, inputs[0].as<T>() + ia, sa, inputs[1].as<T>() + ib, sb, outputs[0].as<T>() + i, e - i);
      else if constexpr (std::is_same_v<T, int32_t>)
        binary_int(eq, inputs[0].as<T>() + ia, sa, inputs[1].as<T>() + ib, sb, outputs[0].as<T>() + i, e - i);
      else
        binary_bool(eq, inputs[0].as<uint8_t>() + ia, sa, inputs[1].as<uint8_t>() + ib, sb, outputs[0].as<uint8_t>() + i,
                    e - i);
    });
  });
}

void compare_kernel(const ir::Equation& eq, std::span<const ConstView> inputs,
                    std::span<const MutView> outputs, Workspace& workspace) {
  expect_arity(eq, inputs, outputs, 2);
  expect_same_count_or_scalar(eq, inputs, outputs[0]);
  const DType t = inputs[0].type->dtype;
  if (inputs[1].type->dtype != t || outputs[0].type->dtype != DType::boolean)
    kernel_bug(eq, "expects two operands of one dtype and a bool result");
  bool* y = outputs[0].as<bool>();
  const bool sa = is_scalar(inputs[0]), sb = is_scalar(inputs[1]);
  visit_dtype(t, [&]<class T>(TypeTag<T>) {
    for_each_tile(outputs[0].type->num_elements(), [&](int64_t i, int64_t e) {
      const int64_t ia = sa ? 0 : i, ib = sb ? 0 : i;
      // bool operands are read as bytes so any stored byte compares as a number.
      if constexpr (std::is_same_v<T, bool>)
        compare_typed(eq, inputs[0].as<uint8_t>() + ia, sa, inputs[1].as<uint8_t>() + ib, sb, y + i, e - i);
      else compare_typed(eq, inputs[0].as<T>() + ia, sa, inputs[1].as<T>() + ib, sb, y + i, e - i);
    });
  });
}

// select(pred, on_true, on_false); each operand has the result's shape or is rank-0.
void select_kernel(const ir::Equation& eq, std::span<const ConstView> inputs,
                   std::span<const MutView> outputs, Workspace& workspace) {
  expect_arity(eq, inputs, outputs, 3);
  expect_same_count_or_scalar(eq, inputs, outputs[0]);
  const int64_t n = outputs[0].type->num_elements();
  if (inputs[0].type->dtype != DType::boolean) kernel_bug(eq, "predicate is not bool");
  const DType t = outputs[0].type->dtype;
  if (inputs[1].type->dtype != t || inputs[2].type->dtype != t) kernel_bug(eq, "branch dtypes differ");
  const auto* p = inputs[0].as<uint8_t>();
  const bool sp = is_scalar(inputs[0]), st = is_scalar(inputs[1]), sf = is_scalar(inputs[2]);
  auto run = [&]<class E>(TypeTag<E>) {
    for_each_tile(n, [&](int64_t i, int64_t e) {
      select_typed(p + (sp ? 0 : i), sp, inputs[1].as<E>() + (st ? 0 : i), st, inputs[2].as<E>() + (sf ? 0 : i), sf,
                   outputs[0].as<E>() + i, e - i);
    });
  };
  switch (dtype_size(t)) {
    case 1: return run(TypeTag<uint8_t>{});
    case 2: return run(TypeTag<uint16_t>{});
    case 4: return run(TypeTag<uint32_t>{});
    case 8: return run(TypeTag<uint64_t>{});
  }
  unsupported_dtype(eq, t);
}

}  // namespace ferry::runtime::cpu

namespace ferry::runtime::cpu {
namespace {

template <class T> void clamp_typed(const T* lo, bool slo, const T* x, const T* hi, bool shi, T* y, int64_t n) {
  using C = compute_t<T>;
  for (int64_t i = 0; i < n; ++i) {
    // min(max(x, lo), hi) with NaN propagating as XLA's max and min do.
    C v = load(x[i]), l = load(lo[slo ? 0 : i]), h = load(hi[shi ? 0 : i]);
    C m = ((v > l) | (v != v)) ? v : l;
    y[i] = store<T>(((m < h) | (m != m)) ? m : h);
  }
}

}  // namespace

// clamp(lo, x, hi); lo and hi have x's shape or are rank-0.
void clamp_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                  Workspace&) {
  expect_arity(eq, inputs, outputs, 3);
  expect_same_count_or_scalar(eq, inputs, outputs[0]);
  const DType t = outputs[0].type->dtype;
  for (const ConstView& in : inputs)
    if (in.type->dtype != t) kernel_bug(eq, "operand dtypes differ");
  if (inputs[1].type->num_elements() != outputs[0].type->num_elements()) kernel_bug(eq, "operand and result differ");
  const int64_t n = outputs[0].type->num_elements();
  visit_dtype(t, [&]<class T>(TypeTag<T>) {
    if constexpr (std::is_same_v<T, bool>) unsupported_dtype(eq, t);
    else for_each_tile(n, [&](int64_t i, int64_t e) {
      const bool slo = is_scalar(inputs[0]), shi = is_scalar(inputs[2]);
      clamp_typed(inputs[0].as<T>() + (slo ? 0 : i), slo, inputs[1].as<T>() + i, inputs[2].as<T>() + (shi ? 0 : i), shi,
                  outputs[0].as<T>() + i, e - i);
    });
  });
}

}  // namespace ferry::runtime::cpu
