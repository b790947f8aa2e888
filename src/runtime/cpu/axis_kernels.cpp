// Kernels that walk one axis: argmax and argmin (index of the first extreme; NaN counts as the
// extreme, as in JAX), the running reductions cumsum, cummax and cummin (inclusive; may run in
// place, since element k is read before it is written), and argsort. The operand is seen as
// [outer, n, inner] around the axis; f16 and bf16 compute in float, i32 sums wrap.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>

#include "runtime/axis_view.h"
#include "runtime/sort_order.h"
#include "runtime/cpu/check.h"
#include "runtime/cpu/dtype_dispatch.h"
#include "runtime/cpu/kernel_groups.h"
#include "runtime/cpu/parallel.h"

namespace ferry::runtime::cpu {
namespace {

AxisView around(const ir::Equation& eq, const Shape& shape, int64_t axis) {
  if (axis < 0 || axis >= static_cast<int64_t>(shape.size())) kernel_bug(eq, "axis out of range");
  return axis_view(shape, axis);
}

// Elements one task walks at least.
constexpr int64_t kGrainElements = 16384;

// Calls f(o, i) for every (outer, inner) pair, pairs split across the pool; each pair walks its
// own line of n elements and writes only its own results, so any split gives the same bits.
template <class F> void for_each_line(const AxisView& v, F&& f) {
  parallel_for(v.outer * v.inner, std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, v.n)),
               [&](int64_t b, int64_t e) {
                 for (int64_t line = b; line < e; ++line) f(line / v.inner, line % v.inner);
               });
}

template <class T> void arg_typed(bool is_max, const T* x, int32_t* y, const AxisView& v) {
  using C = compute_t<T>;
  for_each_line(v, [&](int64_t o, int64_t i) {
      const T* base = x + o * v.n * v.inner + i;
      C best = load(base[0]);
      int32_t at = 0;
      for (int64_t k = 1; k < v.n; ++k) {
        const C c = load(base[k * v.inner]);
        const bool better = is_max ? c > best : c < best;
        if constexpr (is_float_v<T>) {
          if (best != best) break;  // the first NaN wins
          if (better || c != c) best = c, at = static_cast<int32_t>(k);
        } else if (better) {
          best = c, at = static_cast<int32_t>(k);
        }
      }
      y[o * v.inner + i] = at;
  });
}

// Running combination; `combine` takes and returns the compute type.
template <class T, class F> void running(const T* x, T* y, const AxisView& v, bool reverse, F combine) {
  for_each_line(v, [&](int64_t o, int64_t i) {
      const int64_t base = o * v.n * v.inner + i;
      auto acc = load(x[base + (reverse ? v.n - 1 : 0) * v.inner]);
      for (int64_t s = 0; s < v.n; ++s) {
        const int64_t at = base + (reverse ? v.n - 1 - s : s) * v.inner;
        if (s > 0) acc = combine(acc, load(x[at]));
        y[at] = store<T>(acc);
      }
  });
}

// An element's place in argsort's order (sort_order.h).
template <class T> int64_t order_key(T x, bool total_order) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<int64_t>(x);  // i32, bool
  } else {
    const auto c = load(x);
    if constexpr (is_half_v<T>) return float_sort_key(static_cast<int16_t>(x.bits), c != c, c == 0, total_order);
    else if constexpr (std::is_same_v<T, float>) return float_sort_key(std::bit_cast<int32_t>(x), c != c, c == 0, total_order);
    else return float_sort_key(std::bit_cast<int64_t>(x), c != c, c == 0, total_order);
  }
}

// Sorts positions [0, n) of one line (element k at x[k * stride]) into y (y[k * stride]): std::sort
// where the line is contiguous, the in-place heap sort where it is strided (neither allocates).
template <class T>
void argsort_line(const T* x, int32_t* y, int64_t n, int64_t stride, bool descending, bool total_order) {
  auto before = [&](int32_t a, int32_t b) {
    return sorts_before(order_key(x[a * stride], total_order), order_key(x[b * stride], total_order), a, b, descending);
  };
  for (int64_t k = 0; k < n; ++k) y[k * stride] = static_cast<int32_t>(k);
  if (stride == 1) std::sort(y, y + n, before);
  else heap_sort_positions(n, [&](int64_t k) -> int32_t& { return y[k * stride]; }, before);
}

}  // namespace

void argsort_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                    Workspace&) {
  expect_arity(eq, inputs, outputs, 1);
  const ir::Type& in = *inputs[0].type;
  if (outputs[0].type->dtype != DType::i32 || outputs[0].type->shape != in.shape) kernel_bug(eq, "result must be i32 of the operand's shape");
  const auto& p = params_of<ir::SortParams>(eq);
  const AxisView v = around(eq, in.shape, p.axis);
  if (in.num_elements() == 0) return;
  if (v.n > std::numeric_limits<int32_t>::max()) kernel_bug(eq, "axis longer than an i32 position");
  visit_dtype(in.dtype, [&]<class T>(TypeTag<T>) {
    const T* x = inputs[0].as<T>();
    int32_t* y = outputs[0].as<int32_t>();
    for_each_line(v, [&](int64_t o, int64_t i) {
      const int64_t base = o * v.n * v.inner + i;
      argsort_line(x + base, y + base, v.n, v.inner, p.descending, p.total_order);
    });
  });
}

void arg_reduce_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                       Workspace&) {
  expect_arity(eq, inputs, outputs, 1);
  const ir::Type& in = *inputs[0].type;
  if (outputs[0].type->dtype != DType::i32) kernel_bug(eq, "result must be i32");
  const AxisView v = around(eq, in.shape, params_of<ir::ArgReduceParams>(eq).axis);
  if (v.n == 0 || outputs[0].type->num_elements() != v.outer * v.inner) kernel_bug(eq, "result shape mismatch");
  const bool is_max = eq.prim == Primitive::argmax;
  visit_dtype(in.dtype, [&]<class T>(TypeTag<T>) {
    if constexpr (std::is_same_v<T, bool>) unsupported_dtype(eq, in.dtype);
    else arg_typed(is_max, inputs[0].as<T>(), outputs[0].as<int32_t>(), v);
  });
}

void cumulative_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                       Workspace&) {
  expect_arity(eq, inputs, outputs, 1);
  const ir::Type& in = *inputs[0].type;
  if (*outputs[0].type != in) kernel_bug(eq, "result type differs from the operand's");
  const auto& p = params_of<ir::CumulativeParams>(eq);
  const AxisView v = around(eq, in.shape, p.axis);
  if (in.num_elements() == 0) return;
  visit_dtype(in.dtype, [&]<class T>(TypeTag<T>) {
    using C = compute_t<T>;
    const T* x = inputs[0].as<T>();
    T* y = outputs[0].as<T>();
    if constexpr (std::is_same_v<T, bool>) {
      unsupported_dtype(eq, in.dtype);
    } else if constexpr (std::is_same_v<T, int32_t>) {
      switch (eq.prim) {
        case Primitive::cumsum:
          return running(x, y, v, p.reverse, [](int32_t a, int32_t b) {
            return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
          });
        case Primitive::cummax: return running(x, y, v, p.reverse, [](int32_t a, int32_t b) { return a > b ? a : b; });
        case Primitive::cummin: return running(x, y, v, p.reverse, [](int32_t a, int32_t b) { return a < b ? a : b; });
        default: kernel_bug(eq, "not a cumulative reduction");
      }
    } else {
      switch (eq.prim) {
        case Primitive::cumsum: return running(x, y, v, p.reverse, [](C a, C b) { return a + b; });
        case Primitive::cummax:
          return running(x, y, v, p.reverse, [](C a, C b) { return ((a > b) | (a != a)) ? a : b; });
        case Primitive::cummin:
          return running(x, y, v, p.reverse, [](C a, C b) { return ((a < b) | (a != a)) ? a : b; });
        default: kernel_bug(eq, "not a cumulative reduction");
      }
    }
  });
}

}  // namespace ferry::runtime::cpu
