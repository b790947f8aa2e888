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
//
// Threads: when the outermost dimensions are kept ones, each task owns the results under some of
// their indices; when the innermost is kept (a bias gradient: [rows, C] -> [C]), each task owns a
// block of its columns. Either way a task adds into its results in the serial order: the bits are
// those of one thread. Only when both the outermost and the innermost dimension are reduced is the
// outermost cut into a fixed number of slices (from the sizes alone, never the thread count), each
// accumulated into its own partial result (the first in the result, the others in the workspace,
// at most 1/16 of the operand's elements) and combined in slice order: the same bits for every
// thread count, though not the single-pass order.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/cpu/check.h"
#include "runtime/cpu/dims.h"
#include "runtime/cpu/dtype_dispatch.h"
#include "runtime/cpu/kernel_groups.h"
#include "runtime/cpu/odometer.h"
#include "runtime/cpu/parallel.h"

namespace ferry::runtime::cpu {
namespace {

using Dim = LoopDim;  // dst: the stride in the result (0 on a reduced axis), src: in the operand

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

// Elements one task reduces at least, and the most partial results a leading reduced dimension is
// cut into.
constexpr int64_t kGrainElements = 32768;
constexpr int64_t kMaxPartials = 8;

// Partial results for these loop dimensions (the innermost last) and result size: 1 unless both
// the outermost and the innermost dimension are reduced (otherwise a split by results exists, which
// keeps the serial bits), and only while the partials' scratch stays a small part of the operand.
int64_t partials_of(const DimVec<Dim>& dims, int64_t out_n) {
  if (dims.size() < 2 || dims[0].dst != 0 || dims.back().dst != 0) return 1;
  const int64_t total = loop_count(dims);
  const int64_t p = std::clamp<int64_t>(total / kGrainElements, 1, std::min(kMaxPartials, dims[0].size));
  return (p - 1) * out_n <= total / 16 ? p : 1;
}

// Adds the operand elements at outer indices [begin, end) into the accumulators `a`, in order.
template <class Op, class T, class A>
void accumulate(const DimVec<Dim>& outer, const Dim& inner, const T* x, A* a, int64_t begin, int64_t end) {
  const A init = Op::template identity<A>();
  if (inner.dst == 0 && std::is_same_v<Op, MaxOp> && std::is_floating_point_v<A> && inner.src == 1) {
    if constexpr (std::is_floating_point_v<A>)
      odometer(outer, begin, end,
               [&](int64_t o, int64_t i) { a[o] = Op::apply(a[o], contiguous_max_of(x + i, inner.size)); });
  } else if (inner.dst == 0) {
    odometer(outer, begin, end, [&](int64_t o, int64_t i) {
      const T* row = x + i;
      A part[8];
      std::fill_n(part, 8, init);
      int64_t j = 0;
      for (; j + 8 <= inner.size; j += 8)
        for (int k = 0; k < 8; ++k) part[k] = Op::apply(part[k], to_acc(row + (j + k) * inner.src));
      for (; j < inner.size; ++j) part[0] = Op::apply(part[0], to_acc(row + j * inner.src));
      const A r = Op::apply(Op::apply(Op::apply(part[0], part[1]), Op::apply(part[2], part[3])),
                            Op::apply(Op::apply(part[4], part[5]), Op::apply(part[6], part[7])));
      a[o] = Op::apply(a[o], r);
    });
  } else if (inner.dst == 1 && inner.src == 1) {
    // A contiguous row into contiguous results (a bias gradient's rows): unit strides the compiler
    // can see, so the loop vectorizes; each result still adds its rows in order.
    odometer(outer, begin, end, [&](int64_t o, int64_t i) {
      A* __restrict out = a + o;
      const T* __restrict row = x + i;
      for (int64_t j = 0; j < inner.size; ++j) out[j] = Op::apply(out[j], to_acc(row + j));
    });
  } else {
    odometer(outer, begin, end, [&](int64_t o, int64_t i) {
      A* out = a + o;
      const T* row = x + i;
      for (int64_t j = 0; j < inner.size; ++j) out[j * inner.dst] = Op::apply(out[j * inner.dst], to_acc(row + j * inner.src));
    });
  }
}

template <class Op, class T> void reduce_typed(DimVec<Dim> dims, const T* x, T* y, int64_t out_n, Workspace& workspace) {
  using A = typename AccOf<T>::type;
  const A init = Op::template identity<A>();
  const bool empty = std::any_of(dims.begin(), dims.end(), [](const Dim& d) { return d.size == 0; });
  const int64_t partials = empty ? 1 : partials_of(dims, out_n);
  A* acc;
  if constexpr (kAccumulatesInPlace<T>) acc = reinterpret_cast<A*>(y);
  else acc = workspace.take<A>(out_n);
  A* scratch = partials > 1 ? workspace.take<A>((partials - 1) * out_n) : nullptr;
  parallel_for(out_n, kGrainElements, [&](int64_t b, int64_t e) { std::fill(acc + b, acc + e, init); });
  if (!empty) {
    if (dims.empty()) dims.push_back(Dim{1, 0, 1});
    const Dim inner = dims.back();
    dims.pop_back();
    const int64_t count = loop_count(dims);
    int64_t tasks = 1;  // indices of the leading kept dimensions: each owns the results under it
    for (size_t k = 0; k < dims.size() && dims[k].dst != 0; ++k) tasks *= dims[k].size;
    if (partials == 1 && inner.dst != 0 && tasks < 16) {
      // The innermost dimension is kept (a bias gradient, [rows, C] -> [C]): tasks own blocks of
      // its columns and walk every row for them.
      parallel_for(inner.size, std::max<int64_t>(1, kGrainElements / count), [&](int64_t b, int64_t e) {
        accumulate<Op>(dims, Dim{e - b, inner.dst, inner.src}, x + b * inner.src, acc + b * inner.dst, 0, count);
      });
    } else if (partials == 1) {
      const int64_t rest = count / tasks;
      parallel_for(tasks, std::max<int64_t>(1, kGrainElements / (rest * inner.size)), [&](int64_t b, int64_t e) {
        accumulate<Op>(dims, inner, x, acc, b * rest, e * rest);
      });
    } else {
      const int64_t slices = dims[0].size, rest = count / slices;
      parallel_for(partials, 1, [&](int64_t b, int64_t e) {
        for (int64_t c = b; c < e; ++c) {
          A* part = c == 0 ? acc : scratch + (c - 1) * out_n;
          if (c > 0) std::fill_n(part, out_n, init);
          accumulate<Op>(dims, inner, x, part, slices * c / partials * rest, slices * (c + 1) / partials * rest);
        }
      });
      parallel_for(out_n, kGrainElements, [&](int64_t b, int64_t e) {
        for (int64_t c = 1; c < partials; ++c) {
          const A* part = scratch + (c - 1) * out_n;
          for (int64_t k = b; k < e; ++k) acc[k] = Op::apply(acc[k], part[k]);
        }
      });
    }
  }
  parallel_for(out_n, kGrainElements, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) y[k] = from_acc<T>(acc[k]);
  });
}

// The loop dimensions of reducing `shape` over the `reduced` axes, outermost first: size-1
// dimensions dropped, neighbours contiguous on both sides merged.
DimVec<Dim> loop_dims(const Shape& shape, const DimVec<bool>& reduced) {
  DimVec<Dim> dims;
  int64_t in_stride = 1, out_stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    const int64_t size = shape[d];
    const Dim cur{size, reduced[d] ? 0 : out_stride, in_stride};
    in_stride *= size;
    if (!reduced[d]) out_stride *= size;
    if (size == 1) continue;
    if (!dims.empty()) {
      Dim& inner = dims.back();  // built back to front: dims.back() is the inner neighbour
      if (cur.src == inner.src * inner.size && cur.dst == inner.dst * inner.size) {
        inner = Dim{inner.size * size, inner.dst, inner.src};
        continue;
      }
    }
    dims.push_back(cur);
  }
  std::reverse(dims.begin(), dims.end());
  return dims;
}

// The reduced axes of the equation, checked against the operand's rank.
DimVec<bool> reduced_axes(const ir::Equation& eq, size_t rank) {
  DimVec<bool> reduced(rank, false);
  for (int64_t a : params_of<ir::ReduceParams>(eq).axes) {
    if (a < 0 || a >= static_cast<int64_t>(rank) || reduced[static_cast<size_t>(a)]) kernel_bug(eq, "bad axes");
    reduced[static_cast<size_t>(a)] = true;
  }
  return reduced;
}

}  // namespace

void reduce_kernel(const ir::Equation& eq, std::span<const ConstView> inputs,
                   std::span<const MutView> outputs, Workspace& workspace) {
  expect_arity(eq, inputs, outputs, 1);
  const ir::Type& in = *inputs[0].type;
  const ir::Type& out = *outputs[0].type;
  if (in.dtype != out.dtype) kernel_bug(eq, "result dtype differs from the operand's");
  const size_t r = in.shape.size();
  const DimVec<bool> reduced = reduced_axes(eq, r);
  Dims64 kept;
  for (size_t d = 0; d < r; ++d)
    if (!reduced[d]) kept.push_back(in.shape[d]);
  if (!std::equal(kept.begin(), kept.end(), out.shape.begin(), out.shape.end()))
    kernel_bug(eq, "result shape does not match the kept axes");

  const DimVec<Dim> dims = loop_dims(in.shape, reduced);
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
  if (outputs.size() == 1 && inputs.size() == 1) {
    const int64_t out_n = outputs[0]->num_elements();
    const DimVec<Dim> dims = loop_dims(inputs[0]->shape, reduced_axes(eq, inputs[0]->shape.size()));
    const bool empty = std::any_of(dims.begin(), dims.end(), [](const Dim& d) { return d.size == 0; });
    const int64_t partials = empty ? 1 : partials_of(dims, out_n);
    visit_dtype(outputs[0]->dtype, [&]<class T>(TypeTag<T>) {
      using A = typename AccOf<T>::type;
      if constexpr (!kAccumulatesInPlace<T>) size.add<A>(out_n);
      if (partials > 1) size.add<A>((partials - 1) * out_n);
    });
  }
  return size.bytes;
}

}  // namespace ferry::runtime::cpu
