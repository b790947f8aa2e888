// reduce_sum and reduce_max over every subset of axes, every dtype, and empty reductions.
#include <climits>

#include "runtime/kernel_test_util.h"

namespace ferry::kernel_test {
namespace {

using P = Primitive;

// Naive reduction in double; `max` follows XLA (NaN propagates; -inf / INT_MIN / false when empty).
std::vector<double> ref_reduce(const Buffer& x, const ir::Dims& axes, bool max, Shape& out) {
  const Shape& s = x.shape();
  std::vector<bool> red(s.size(), false);
  for (int64_t a : axes) red[static_cast<size_t>(a)] = true;
  out.clear();
  for (size_t d = 0; d < s.size(); ++d)
    if (!red[d]) out.push_back(s[d]);
  double init = 0;
  if (max) init = x.dtype() == DType::i32 ? INT_MIN : x.dtype() == DType::boolean ? 0 : -INFINITY;
  std::vector<double> acc(static_cast<size_t>(num_elements(out)), init);
  for (int64_t i = 0; i < x.size(); ++i) {
    const auto xi = unravel(i, s);
    std::vector<int64_t> oi;
    for (size_t d = 0; d < s.size(); ++d)
      if (!red[d]) oi.push_back(xi[d]);
    double& a = acc[static_cast<size_t>(ravel(oi, out))];
    const double v = x.get(i);
    if (!max) a += v;
    else if (std::isnan(v) || std::isnan(a)) a = NAN;
    else a = std::max(a, v);
  }
  if (!max && x.dtype() == DType::boolean)
    for (double& a : acc) a = a != 0;
  return acc;
}

void check(DType d, const Shape& shape, const ir::Dims& axes) {
  Buffer x = random_buffer(d, shape);
  for (bool max : {false, true}) {
    Shape out;
    const auto want = ref_reduce(x, axes, max, out);
    Buffer y = run1(max ? P::reduce_max : P::reduce_sum, ir::ReduceParams{axes}, {&x}, d, out);
    // Sums of many rounded terms: allow for their count.
    const int64_t terms = out.empty() || num_elements(out) == 0 ? x.size() : x.size() / std::max<int64_t>(1, num_elements(out));
    const double tol = max ? 0 : tolerance(d) * std::max<double>(4, std::sqrt(double(terms)) * 4);
    expect_close(y, want, tol,
                 fmt::format("{} {} {} axes {}", max ? "max" : "sum", name(d), shape_string(shape), fmt::join(axes, ",")));
  }
}

TEST(ReduceKernel, EverySubsetOfAxes3D) {
  const Shape shape{3, 4, 5};
  for (DType d : all_dtypes())
    for (int mask = 0; mask < 8; ++mask) {
      ir::Dims axes;
      for (int a = 0; a < 3; ++a)
        if (mask & (1 << a)) axes.push_back(a);
      check(d, shape, axes);
    }
}

TEST(ReduceKernel, AxesInAnyOrderAnd4D) {
  check(DType::f32, {2, 3, 4, 5}, {3, 1});
  check(DType::f64, {2, 3, 4, 5}, {0, 2});
  check(DType::bf16, {2, 3, 4, 5}, {2, 1, 3});
  check(DType::i32, {2, 1, 4, 1}, {1, 2});
}

TEST(ReduceKernel, LongRowsUseThePartialSums) {
  for (DType d : float_dtypes()) {
    check(d, {3, 1000}, {1});
    check(d, {1000, 3}, {0});
    check(d, {1003}, {0});
  }
  check(DType::i32, {2, 999}, {1});
}

TEST(ReduceKernel, EmptyReductions) {
  for (DType d : all_dtypes()) {
    check(d, {3, 0}, {1});     // every output reduces nothing
    check(d, {0, 4}, {0});
    check(d, {0}, {0});        // to a scalar
    check(d, {2, 0, 3}, {0});  // empty result
    check(d, {}, {});          // rank 0, no axes
    check(d, {4}, {});         // no axes: a copy
  }
  Buffer e(DType::f32, {0});
  expect_close(run1(P::reduce_max, ir::ReduceParams{{0}}, {&e}, DType::f32, {}), {-INFINITY}, 0, "max of none");
  Buffer ei(DType::i32, {2, 0});
  expect_close(run1(P::reduce_max, ir::ReduceParams{{1}}, {&ei}, DType::i32, {2}), {INT_MIN, INT_MIN}, 0, "i32");
}

TEST(ReduceKernel, MaxPropagatesNaN) {
  for (DType d : float_dtypes()) {
    Buffer x = filled(d, {2, 10}, {1, 2, NAN, 4, 5, 6, 7, 8, 9, 10, 1, 2, 3, 4, 5, 6, 7, 8, 9, NAN});
    expect_close(run1(P::reduce_max, ir::ReduceParams{{1}}, {&x}, d, {2}), {NAN, NAN}, 0, name(d));
    expect_close(run1(P::reduce_max, ir::ReduceParams{{0}}, {&x}, d, {10}),
                 {1, 2, NAN, 4, 5, 6, 7, 8, 9, NAN}, 0, name(d));
  }
}

TEST(ReduceKernel, HalfSumsAccumulateInFloat) {
  // 4096 ones: an f16 accumulator would stall at 2048; a float one is exact.
  Buffer x = filled(DType::f16, {4096}, std::vector<double>(4096, 1.0));
  expect_close(run1(P::reduce_sum, ir::ReduceParams{{0}}, {&x}, DType::f16, {}), {4096}, 0, "f16");
}

TEST(ReduceKernel, BoolIsOrAndReadsAnyNonzeroByteAsTrue) {
  Buffer x(DType::boolean, {2, 3});
  const uint8_t bytes[] = {0, 0, 0, 0, 7, 0};
  std::memcpy(x.data(), bytes, sizeof bytes);
  for (P p : {P::reduce_sum, P::reduce_max}) {
    Buffer y = run1(p, ir::ReduceParams{{1}}, {&x}, DType::boolean, {2});
    EXPECT_EQ(y.as<uint8_t>()[0], 0);
    EXPECT_EQ(y.as<uint8_t>()[1], 1);  // normalised to 1
  }
}

TEST(ReduceKernel, Int32SumWraps) {
  Buffer x = filled(DType::i32, {3}, {INT_MAX, 1, 1});
  expect_close(run1(P::reduce_sum, ir::ReduceParams{{0}}, {&x}, DType::i32, {}), {INT_MIN + 1.0}, 0, "wrap");
}

}  // namespace
}  // namespace ferry::kernel_test
