// Tracing: what each Tensor operation records, and the errors it raises.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "ferry/ferry.h"
#include "support/error_of.h"

namespace fy = ferry;
using ::testing::HasSubstr;
using ferry::testing::error_of;

namespace {

template <class F> std::string trace_text(F f, fy::ShapeDtype a) { return fy::jit(f).lower(a).as_text(); }
template <class F> std::string trace_text(F f, fy::ShapeDtype a, fy::ShapeDtype b) {
  return fy::jit(f).lower(a, b).as_text();
}

TEST(Trace, ScalarLiteralTakesTheTensorsTypeAndShape) {
  auto text = trace_text([](fy::Tensor x) { return x * 2.0; }, {{2, 3}, fy::DType::f32});
  EXPECT_EQ(text,
            "program @main(%0: f32[2,3]) {\n"
            "  %1 = constant[value=2, dtype=f32, shape=[2,3]] : f32[2,3]\n"
            "  %2 = mul %0, %1 : f32[2,3]\n"
            "  return %2\n"
            "}\n");
}

TEST(Trace, BinaryOpsBroadcastLikeNumpy) {
  auto text = trace_text([](fy::Tensor a, fy::Tensor b) { return a + b; }, {{2, 3}}, {{3}});
  EXPECT_THAT(text, HasSubstr("broadcast_in_dim[shape=[2,3], broadcast_dimensions=[1]] %1 : f32[2,3]"));
  EXPECT_THAT(text, HasSubstr("add %0, %2 : f32[2,3]"));
  // Size-1 dims on both sides stretch.
  auto both = trace_text([](fy::Tensor a, fy::Tensor b) { return a * b; }, {{4, 1}}, {{1, 5}});
  EXPECT_THAT(both, HasSubstr("mul %2, %3 : f32[4,5]"));
}

TEST(Trace, ShapeErrorsNameTheOperationAndShapes) {
  auto e = error_of([] { trace_text([](fy::Tensor a, fy::Tensor b) { return a + b; }, {{2, 3}}, {{4}}); });
  EXPECT_EQ(e.code(), fy::ErrorCode::invalid_argument);
  EXPECT_THAT(e.message(), HasSubstr("add"));
  EXPECT_THAT(e.message(), HasSubstr("f32[2,3]"));
  EXPECT_THAT(e.message(), HasSubstr("f32[4]"));

  auto m = error_of([] { trace_text([](fy::Tensor a, fy::Tensor b) { return fy::matmul(a, b); }, {{2, 3}}, {{4, 5}}); });
  EXPECT_EQ(m.code(), fy::ErrorCode::invalid_argument);
  EXPECT_THAT(m.message(), HasSubstr("dot_general"));
  EXPECT_THAT(m.message(), HasSubstr("f32[2,3]"));
  EXPECT_THAT(m.message(), HasSubstr("f32[4,5]"));

  auto r = error_of([] { trace_text([](fy::Tensor a) { return fy::reshape(a, {4, 2}); }, {{2, 3}}); });
  EXPECT_THAT(r.message(), HasSubstr("reshape"));
  EXPECT_THAT(r.message(), HasSubstr("f32[2,3]"));
}

TEST(Trace, DtypeMismatchIsAnError) {
  auto e = error_of([] {
    trace_text([](fy::Tensor a, fy::Tensor b) { return a * b; }, {{3}, fy::DType::f32}, {{3}, fy::DType::f64});
  });
  EXPECT_EQ(e.code(), fy::ErrorCode::invalid_argument);
  EXPECT_THAT(e.message(), HasSubstr("mul: operand dtypes differ (f32[3] and f64[3])"));
}

TEST(Trace, UndefinedAndEscapedTensorsAreErrors) {
  auto u = error_of([] { trace_text([](fy::Tensor a) { return a + fy::Tensor{}; }, {{3}}); });
  EXPECT_THAT(u.message(), HasSubstr("undefined Tensor"));

  fy::Tensor kept;
  fy::jit([&](fy::Tensor a) {
    kept = a;
    return a;
  }).lower(fy::ShapeDtype{{3}});
  auto esc = error_of([&] { trace_text([&](fy::Tensor a) { return a + kept; }, {{3}}); });
  EXPECT_EQ(esc.code(), fy::ErrorCode::invalid_argument);
  EXPECT_THAT(esc.message(), HasSubstr("already finished"));
  auto later = error_of([&] { fy::sin(kept); });
  EXPECT_THAT(later.message(), HasSubstr("sin"));
}

TEST(Trace, ValuesWithoutInputsNeedATrace) {
  auto e = error_of([] { fy::iota(fy::DType::i32, {3}); });
  EXPECT_EQ(e.code(), fy::ErrorCode::invalid_argument);
  EXPECT_THAT(e.message(), HasSubstr("iota: called outside of a traced function"));
  auto text = trace_text([](fy::Tensor x) { return x + fy::convert(fy::iota(fy::DType::i32, {3}), fy::DType::f32); },
                         {{{3}}});
  EXPECT_THAT(text, HasSubstr("iota[dtype=i32, shape=[3], dimension=0] : i32[3]"));
  EXPECT_THAT(text, HasSubstr("convert_element_type[new_dtype=f32]"));
}

TEST(Trace, MatmulCoversVectorsMatricesAndBatches) {
  auto shape_of = [](fy::Shape a, fy::Shape b) {
    fy::Shape out;
    fy::jit([&](fy::Tensor x, fy::Tensor y) {
      fy::Tensor r = fy::matmul(x, y);
      out = r.shape();
      return r;
    }).lower(fy::ShapeDtype{a}, fy::ShapeDtype{b});
    return out;
  };
  EXPECT_EQ(shape_of({3}, {3}), fy::Shape{});
  EXPECT_EQ(shape_of({2, 3}, {3}), (fy::Shape{2}));
  EXPECT_EQ(shape_of({3}, {3, 4}), (fy::Shape{4}));
  EXPECT_EQ(shape_of({2, 3}, {3, 4}), (fy::Shape{2, 4}));
  EXPECT_EQ(shape_of({5, 2, 3}, {3, 4}), (fy::Shape{5, 2, 4}));
  EXPECT_EQ(shape_of({2, 3}, {5, 3, 4}), (fy::Shape{5, 2, 4}));
  EXPECT_EQ(shape_of({5, 2, 3}, {5, 3, 4}), (fy::Shape{5, 2, 4}));
  auto e = error_of([&] { shape_of({5, 2, 3}, {6, 3, 4}); });
  EXPECT_THAT(e.message(), HasSubstr("dot_general"));
}

TEST(Trace, ReductionsAndReshapeHelpers) {
  fy::Shape s1, s2, s3;
  fy::jit([&](fy::Tensor x) {
    s1 = fy::sum(x, {-1}).shape();
    s2 = fy::reshape(x, {-1}).shape();
    s3 = fy::mean(x).shape();
    return fy::max(x);
  }).lower(fy::ShapeDtype{{2, 3, 4}});
  EXPECT_EQ(s1, (fy::Shape{2, 3}));
  EXPECT_EQ(s2, (fy::Shape{24}));
  EXPECT_EQ(s3, fy::Shape{});
  auto e = error_of([] { trace_text([](fy::Tensor x) { return fy::sum(x, {3}); }, {{2, 3}}); });
  EXPECT_THAT(e.message(), HasSubstr("axis 3 is out of range for rank 2"));
}

// jnp.max(x, 1) reduces over axis 1; a number that could be meant as an axis must not silently
// become an elementwise max with that number.
template <class A> concept MaxWith = requires(fy::Tensor t, A a) { fy::max(t, a); };
template <class A> concept MinWith = requires(fy::Tensor t, A a) { fy::min(t, a); };
static_assert(!MaxWith<int> && !MinWith<int> && !MaxWith<int64_t> && !MinWith<long>);
static_assert(MaxWith<double> && MinWith<float> && MaxWith<fy::Axes> && MinWith<fy::Axes>);

TEST(Trace, ReductionsOverAxesReduceAsJaxDoes) {
  auto run = [](auto f, const fy::Array& x) { return fy::jit(f).lower(x).compile()(x).at(0); };
  fy::Array x = fy::Array::from(std::vector<float>{1, 5, 2, 7, 0, 3}, {2, 3});
  fy::Array max1 = run([](fy::Tensor t) { return fy::max(t, {1}); }, x);
  EXPECT_EQ(max1.shape(), (fy::Shape{2}));
  EXPECT_EQ(max1.to_vector<float>(), (std::vector<float>{5, 7}));
  EXPECT_EQ(run([](fy::Tensor t) { return fy::min(t, {1}); }, x).to_vector<float>(), (std::vector<float>{1, 0}));
  EXPECT_EQ(run([](fy::Tensor t) { return fy::min(t, {0}); }, x).to_vector<float>(), (std::vector<float>{1, 0, 2}));
  EXPECT_EQ(run([](fy::Tensor t) { return fy::min(t); }, x).to_vector<float>(), (std::vector<float>{0}));
  EXPECT_EQ(run([](fy::Tensor t) { return fy::sum(t, {1}); }, x).to_vector<float>(), (std::vector<float>{8, 10}));
  EXPECT_EQ(run([](fy::Tensor t) { return fy::mean(t, {0}); }, x).to_vector<float>(), (std::vector<float>{4, 2.5f, 2.5f}));
  // Elementwise with a floating-point number, and with maximum/minimum for any number.
  EXPECT_EQ(run([](fy::Tensor t) { return fy::max(t, 2.0); }, x).to_vector<float>(), (std::vector<float>{2, 5, 2, 7, 2, 3}));
  EXPECT_EQ(run([](fy::Tensor t) { return fy::minimum(t, 2); }, x).to_vector<float>(), (std::vector<float>{1, 2, 2, 2, 0, 2}));
  // i32 min over values that include INT32_MIN, where -x would overflow, and of nothing (INT32_MAX).
  const int32_t lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
  fy::Array xi = fy::Array::from(std::vector<int32_t>{lo, 0, 3, hi}, {2, 2});
  EXPECT_EQ(run([](fy::Tensor t) { return fy::min(t, {1}); }, xi).to_vector<int32_t>(), (std::vector<int32_t>{lo, 3}));
  fy::Array empty = fy::Array::from(std::vector<int32_t>{}, {0});
  EXPECT_EQ(run([](fy::Tensor t) { return fy::min(t); }, empty).to_vector<int32_t>(), (std::vector<int32_t>{hi}));
  auto e = error_of([] { trace_text([](fy::Tensor x) { return fy::min(x, {0}); }, {{2}, fy::DType::boolean}); });
  EXPECT_THAT(e.message(), HasSubstr("reduce_min"));
}

TEST(Trace, NoOpConversionsRecordNothing) {
  auto text = trace_text(
      [](fy::Tensor x) { return fy::device_put(fy::convert(x, fy::DType::f32), fy::MemoryKind::device); }, {{3}});
  EXPECT_EQ(text, "program @main(%0: f32[3]) {\n  return %0\n}\n");
  auto moved = trace_text([](fy::Tensor x) { return fy::device_put(x, fy::MemoryKind::pinned_host); }, {{3}});
  EXPECT_THAT(moved, HasSubstr("%1 = device_put[dst=pinned_host] %0 : f32[3]{pinned_host}"));
}

}  // namespace
