// reduce_sum, reduce_max and reduce_min over a set of axes; the result drops those axes (as in XLA).
//
// The input is walked once in memory order. Each input dimension has an output stride (0 for a
// reduced axis); after dropping size-1 dimensions and merging contiguous ones, the innermost loop
// either accumulates a contiguous run into one output (8 independent partial results so the loop
// pipelines; float max uses explicit SIMD lanes) or combines a contiguous row into a contiguous
// output row, which vectorises. f16 and bf16
// accumulate in float and round once; i32 sums wrap. Sum of nothing is 0; max of nothing is -inf
// (floats), INT32_MIN (i32) or false (bool), min of nothing +inf, INT32_MAX or true. max and min propagate NaN.
//
// The result is the accumulator where the two have the same size (f32, f64, i32 as uint32, bool as
// a byte): no scratch. f16 and bf16 accumulate in a float per result element in the workspace.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/cpu/check.h"
#include "runtime/cpu/dims.h"
#include "runtime/cpu/dtype_dispatch.h"
#include "runtime/cpu/kernel_groups.h"

namespace ferry::runtime::cpu {
namespace {

struct Dim {
  int64_t size, out, in;  // strides in elements
};

// The accumulator of each storage type.
template <class T> struct AccOf {
  using type = compute_t<T>;
};
template <> struct AccOf<int32_t> {
  using type = uint32_t;  // wraps without UB
};
template <> struct AccOf<bool> {
  using type = uint8_t;
};

struct SumOp {
  template <class A> static A identity() { return A(0); }
  template <class A> static A apply(A a, A b) {
    if constexpr (std::is_same_v<A, uint8_t>) return a | b;  // bool: "or"
    else return a + b;
  }
};

struct MaxOp {
  template <class A> static A identity() {
    if constexpr (std::is_floating_point_v<A>) return -std::numeric_limits<A>::infinity();
    else if constexpr (std::is_same_v<A, uint32_t>) return 0x80000000u;  // INT32_MIN
    else return A(0);
  }
  template <class A> static A apply(A a, A b) {
    if constexpr (std::is_floating_point_v<A>) return ((a > b) | (a != a)) ? a : b;  // "|", not "||": no branch
    else if constexpr (std::is_same_v<A, uint32_t>) return static_cast<int32_t>(a) > static_cast<int32_t>(b) ? a : b;
    else return a | b;
  }
};

struct MinOp {
  template <class A> static A identity() {
    if constexpr (std::is_floating_point_v<A>) return std::numeric_limits<A>::infinity();
    else if constexpr (std::is_same_v<A, uint32_t>) return 0x7fffffffu;  // INT32_MAX
    else return A(1);
  }
  template <class A> static A apply(A a, A b) {
    if constexpr (std::is_floating_point_v<A>) return ((a < b) | (a != a)) ? a : b;
    else if constexpr (std::is_same_v<A, uint32_t>) return static_cast<int32_t>(a) < static_cast<int32_t>(b) ? a : b;
    else return a & b;
  }
};

// Reads element *p as an accumulator value; bool storage is read as a byte (any nonzero is true).
template <class T> inline typename AccOf<T>::type to_acc(const T* p) {
  using A = typename AccOf<T>::type;
  if constexpr (std::is_same_v<T, bool>) return static_cast<A>(*reinterpret_cast<const uint8_t*>(p) != 0);
  else return static_cast<A>(load(*p));
}

template <class T, class A> inline T from_acc(A a) {
  if constexpr (std::is_same_v<T, int32_t>) return static_cast<int32_t>(a);
  else if constexpr (std::is_same_v<T, bool>) return a != 0;
  else return store<T>(a);
}

// Calls body(out_offset, in_offset) for every index of `outer` in row-major order.
template <class Body> void odometer(const DimVec<Dim>& outer, Body&& body) {
  int64_t count = 1;
  for (const Dim& d : outer) count *= d.size;
  Dims64 idx(outer.size(), 0);
  int64_t o = 0, i = 0;
  for (int64_t it = 0; it < count; ++it) {
    body(o, i);
    for (size_t k = outer.size(); k-- > 0;) {
      if (++idx[k] < outer[k].size) {
        o += outer[k].out;
        i += outer[k].in;
        break;
      }
      idx[k] = 0;
      o -= outer[k].out * (outer[k].size - 1);
      i -= outer[k].in * (outer[k].size - 1);
    }
  }
}

// NaN-propagating max of a contiguous run. GCC vectorises neither the scalar nor the 8-lane form of
// a conditional max (without -ffast-math), so this uses GCC/Clang vector extensions: lanes of running
// maxima plus lanes of "saw a NaN".
template <class F> struct Vec;
template <> struct Vec<float> {
  typedef float type __attribute__((vector_size(16)));
  typedef int32_t mask __attribute__((vector_size(16)));
};
template <> struct Vec<double> {
  typedef double type __attribute__((vector_size(16)));
  typedef int64_t mask __attribute__((vector_size(16)));
};

template <class F> F contiguous_max(const F* x, int64_t n) {
  constexpr int kLanes = 16 / sizeof(F);
  using V = typename Vec<F>::type;
  using Mask = typename Vec<F>::mask;
  constexpr F kLow = -std::numeric_limits<F>::infinity();
  V m;
  for (int k = 0; k < kLanes; ++k) m[k] = kLow;
  Mask nan = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    V v;
    std::memcpy(&v, x + j, sizeof v);
    m = v > m ? v : m;
    nan |= v != v;
  }
  F r = kLow;
  bool any_nan = false;
  for (int k = 0; k < kLanes; ++k) {
    r = m[k] > r ? m[k] : r;
    any_nan |= nan[k] != 0;
  }
  for (; j < n; ++j) {
    r = x[j] > r ? x[j] : r;
    any_nan |= x[j] != x[j];
  }
  return any_nan ? std::numeric_limits<F>::quiet_NaN() : r;
}

// The combined max of a contiguous run of T, in its accumulator type.
template <class T> auto contiguous_max_of(const T* x, int64_t n) {
  if constexpr (is_half_v<T>) {
    constexpr int64_t kChunk = 256;
    float buf[kChunk];
    float r = -std::numeric_limits<float>::infinity();
    for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
      const int64_t m = std::min(kChunk, n - i0);
      for (int64_t j = 0; j < m; ++j) buf[j] = load(x[i0 + j]);
      r = MaxOp::apply(r, contiguous_max(buf, m));
    }
    return r;
  } else {
    return contiguous_max(x, n);
  }
}

// The accumulators live in the result when they have its size (converted in place at the end),
// else in the workspace.
template <class T> constexpr bool kAccumulatesInPlace = sizeof(typename AccOf<T>::type) == sizeof(T);

template <class Op, class T> void reduce_typed(DimVec<Dim> dims, const T* x, T* y, int64_t out_n, Workspace& workspace) {
  using A = typename AccOf<T>::type;
  const A init = Op::template identity<A>();
  A* acc;
  if constexpr (kAccumulatesInPlace<T>) acc = reinterpret_cast<A*>(y);
  else acc = workspace.take<A>(out_n);
  std::fill_n(acc, out_n, init);
  const bool empty = std::any_of(dims.begin(), dims.end(), [](const Dim& d) { return d.size == 0; });
  if (!empty) {
    if (dims.empty()) dims.push_back(Dim{1, 0, 1});
    const Dim inner = dims.back();
    dims.pop_back();
    A* a = acc;
    if (inner.out == 0 && std::is_same_v<Op, MaxOp> && std::is_floating_point_v<A> && inner.in == 1) {
      if constexpr (std::is_floating_point_v<A>)
        odometer(dims, [&](int64_t o, int64_t i) { a[o] = Op::apply(a[o], contiguous_max_of(x + i, inner.size)); });
    } else if (inner.out == 0) {
      odometer(dims, [&](int64_t o, int64_t i) {
        const T* row = x + i;
        A part[8];
        std::fill_n(part, 8, init);
        int64_t j = 0;
        for (; j + 8 <= inner.size; j += 8)
          for (int k = 0; k < 8; ++k) part[k] = Op::apply(part[k], to_acc(row + (j + k) * inner.in));
        for (; j < inner.size; ++j) part[0] = Op::apply(part[0], to_acc(row + j * inner.in));
        const A r = Op::apply(Op::apply(Op::apply(part[0], part[1]), Op::apply(part[2], part[3])),
                              Op::apply(Op::apply(part[4], part[5]), Op::apply(part[6], part[7])));
        a[o] = Op::apply(a[o], r);
      });
    } else {
      odometer(dims, [&](int64_t o, int64_t i) {
        A* out = a + o;
        const T* row = x + i;
        for (int64_t j = 0; j < inner.size; ++j)
          out[j * inner.out] = Op::apply(out[j * inner.out], to_acc(row + j * inner.in));
      });
    }
  }
  for (int64_t k = 0; k < out_n; ++k) y[k] = from_acc<T>(acc[k]);
}

}  // namespace

void reduce_kernel(const ir::Equation& eq, std::span<const ConstView> inputs,
                   std::span<const MutView> outputs, Workspace& workspace) {
  expect_arity(eq, inputs, outputs, 1);
  const auto& axes = params_of<ir::ReduceParams>(eq).axes;
  const ir::Type& in = *inputs[0].type;
  const ir::Type& out = *outputs[0].type;
  if (in.dtype != out.dtype) kernel_bug(eq, "result dtype differs from the operand's");
  const size_t r = in.shape.size();
  DimVec<bool> reduced(r, false);
  for (int64_t a : axes) {
    if (a < 0 || a >= static_cast<int64_t>(r) || reduced[static_cast<size_t>(a)]) kernel_bug(eq, "bad axes");
    reduced[static_cast<size_t>(a)] = true;
  }
  Dims64 kept;
  for (size_t d = 0; d < r; ++d)
    if (!reduced[d]) kept.push_back(in.shape[d]);
  if (!std::equal(kept.begin(), kept.end(), out.shape.begin(), out.shape.end()))
    kernel_bug(eq, "result shape does not match the kept axes");

  // Input dims with their output stride (0 when reduced), size-1 dims dropped, contiguous merged.
  DimVec<Dim> dims;
  int64_t in_stride = 1, out_stride = 1;
  for (size_t d = r; d-- > 0;) {
    const int64_t size = in.shape[d];
    const Dim cur{size, reduced[d] ? 0 : out_stride, in_stride};
    in_stride *= size;
    if (!reduced[d]) out_stride *= size;
    if (size == 1) continue;
    if (!dims.empty()) {
      Dim& inner = dims.back();  // built back to front: dims.back() is the inner neighbour
      if (cur.in == inner.in * inner.size && cur.out == inner.out * inner.size) {
        inner = Dim{inner.size * size, inner.out, inner.in};
        continue;
      }
    }
    dims.push_back(cur);
  }
  std::reverse(dims.begin(), dims.end());

  const int64_t out_n = out.num_elements();
  visit_dtype(in.dtype, [&]<class T>(TypeTag<T>) {
    if (eq.prim == Primitive::reduce_sum)
      reduce_typed<SumOp>(dims, inputs[0].as<T>(), outputs[0].as<T>(), out_n, workspace);
    else if (eq.prim == Primitive::reduce_max)
      reduce_typed<MaxOp>(dims, inputs[0].as<T>(), outputs[0].as<T>(), out_n, workspace);
    else if (eq.prim == Primitive::reduce_min)
      reduce_typed<MinOp>(dims, inputs[0].as<T>(), outputs[0].as<T>(), out_n, workspace);
    else kernel_bug(eq, "not a reduction");
  });
}

}  // namespace ferry::runtime::cpu

namespace ferry::runtime::cpu {

int64_t reduce_workspace(const ir::Equation& eq, std::span<const ir::Type* const> inputs,
                         std::span<const ir::Type* const> outputs) {
  WorkspaceSize size;
  if (outputs.size() == 1)
    visit_dtype(outputs[0]->dtype, [&]<class T>(TypeTag<T>) {
      if constexpr (!kAccumulatesInPlace<T>) size.add<typename AccOf<T>::type>(outputs[0]->num_elements());
    });
  return size.bytes;
}

}  // namespace ferry::runtime::cpu
