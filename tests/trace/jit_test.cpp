// jit: lowering argument structures, compiling, running, and the errors at each step.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tuple>

#include "ferry/ferry.h"
#include "support/error_of.h"

namespace fy = ferry;
using ::testing::HasSubstr;
using ferry::testing::error_of;

namespace {

TEST(Jit, RunsAFunctionOfSeveralTensors) {
  auto f = fy::jit([](fy::Tensor a, fy::Tensor b) { return a * b + 1.0; });
  auto a = fy::Array::from(std::vector<float>{1, 2, 3}, {3});
  auto b = fy::Array::from(std::vector<float>{4, 5, 6}, {3});
  auto out = f.lower(a, b).compile()(a, b);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{5, 11, 19}));
  // Calling the jitted function on arrays lowers, compiles and runs in one go.
  EXPECT_EQ(f(a, b)[0].to_vector<float>(), (std::vector<float>{5, 11, 19}));
}

TEST(Jit, ParameterListsAndStructuredResults) {
  auto f = fy::jit([](fy::Tensor x, std::vector<fy::Tensor> ps) {
    std::vector<fy::Tensor> scaled;
    for (auto& p : ps) scaled.push_back(p * x);
    return std::tuple{fy::sum(x), scaled, std::pair{x, x + 1.0}};
  });
  auto x = fy::Array::scalar(2.0f);
  std::vector<fy::Array> ps = {fy::ones({2}), fy::full({3}, 3.0)};
  auto lowered = f.lower(x, ps);
  auto out = lowered.compile()(x, ps);
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{2}));
  EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{2, 2}));
  EXPECT_EQ(out[2].to_vector<float>(), (std::vector<float>{6, 6, 6}));
  EXPECT_EQ(out[3].to_vector<float>(), (std::vector<float>{2}));
  EXPECT_EQ(out[4].to_vector<float>(), (std::vector<float>{3}));
  // A returned input is a copy, not the caller's buffer.
  EXPECT_NE(out[3].data(), x.data());
}

TEST(Jit, LowersFromShapeDtypeSpecs) {
  auto f = fy::jit([](fy::Tensor x) { return fy::exp(x); });
  auto c = f.lower(fy::ShapeDtype{{2, 2}, fy::DType::f64}).compile();
  auto out = c(fy::zeros({2, 2}, fy::DType::f64));
  EXPECT_EQ(out[0].to_vector<double>(), (std::vector<double>{1, 1, 1, 1}));
  ASSERT_EQ(c.input_specs().size(), 1u);
  EXPECT_EQ(c.input_specs()[0].dtype, fy::DType::f64);
  EXPECT_EQ(c.output_specs()[0].shape, (fy::Shape{2, 2}));
}

TEST(Jit, NestedJitInlinesIntoTheOuterTrace) {
  auto inner = fy::jit([](fy::Tensor x) { return fy::sin(x); });
  auto outer = fy::jit([&](fy::Tensor x) { return inner(x) * 2.0; });
  auto text = outer.lower(fy::ShapeDtype{{3}}).as_text();
  EXPECT_THAT(text, HasSubstr("sin %0"));
  EXPECT_THAT(text, HasSubstr("mul"));
}

TEST(Jit, WrongArgumentsAreInvalidArgument) {
  auto c = fy::jit([](fy::Tensor a, fy::Tensor b) { return a + b; }).lower(fy::ShapeDtype{{3}}, fy::ShapeDtype{{3}}).compile();
  auto count = error_of([&] { c(fy::ones({3})); });
  EXPECT_EQ(count.code(), fy::ErrorCode::invalid_argument);
  EXPECT_THAT(count.message(), HasSubstr("takes 2 argument(s), got 1"));
  auto shape = error_of([&] { c(fy::ones({3}), fy::ones({4})); });
  EXPECT_THAT(shape.message(), HasSubstr("argument 1 of main must be f32[3], got f32[4]"));
  auto dtype = error_of([&] { c(fy::ones({3}), fy::ones({3}, fy::DType::i32)); });
  EXPECT_THAT(dtype.message(), HasSubstr("got i32[3]"));
  auto empty = error_of([&] { c(fy::ones({3}), fy::Array{}); });
  EXPECT_THAT(empty.message(), HasSubstr("an empty Array"));
  auto kind = error_of([&] {
    c(fy::ones({3}), fy::Array::from(std::vector<float>{1, 2, 3}, {3}, fy::MemoryKind::pinned_host));
  });
  EXPECT_THAT(kind.message(), HasSubstr("f32[3]{pinned_host}"));
  // ferry stays usable after errors.
  EXPECT_EQ(c(fy::ones({3}), fy::ones({3}))[0].to_vector<float>(), (std::vector<float>{2, 2, 2}));
}

// Issue 32: c(x, {w, w, w}) on a function lowered with {w, w} said "main takes 3 argument(s), got
// 4": the flat count, not the structure the caller got wrong.
TEST(Jit, AStructureMismatchIsNamedAsOne) {
  auto f = fy::jit([](fy::Tensor x, std::vector<fy::Tensor> ws) { return x + ws[0]; });
  fy::Array w = fy::ones({3});
  fy::Compiled c = f.lower(fy::ones({3}), std::vector<fy::Array>{w, w}).compile();
  fy::Error e = error_of([&] { c(fy::ones({3}), std::vector<fy::Array>{w, w, w}); });
  EXPECT_EQ(e.code(), fy::ErrorCode::invalid_argument);
  EXPECT_THAT(e.message(), HasSubstr("compiled call: argument 1 has the structure [*, *, *] but the function was "
                                     "lowered with [*, *]"));
  fy::Error fewer = error_of([&] { c(fy::ones({3}), std::vector<fy::Array>{w}); });
  EXPECT_THAT(fewer.message(), HasSubstr("argument 1 has the structure [*] but the function was lowered with [*, *]"));
  // A list of thousands of arrays is echoed bounded (issue 32: messages bounded).
  std::vector<fy::Array> many(5000, w);
  fy::Error huge = error_of([&] { c(fy::ones({3}), many); });
  EXPECT_THAT(huge.message(), HasSubstr("[*, *, *, *, *, *, *, *, ... and 4992 more]"));
  EXPECT_LT(huge.message().size(), 300u);
  EXPECT_EQ(c(fy::ones({3}), std::vector<fy::Array>{w, w})[0].to_vector<float>(), (std::vector<float>{2, 2, 2}));
}

TEST(Jit, UnknownBackendIsUnimplemented) {
  auto l = fy::jit([](fy::Tensor a) { return a; }).lower(fy::ShapeDtype{{3}});
  auto e = error_of([&] { l.compile({.backend = "cuda"}); });
  EXPECT_EQ(e.code(), fy::ErrorCode::unimplemented);
  EXPECT_THAT(e.message(), HasSubstr("cuda"));
  auto neg = error_of([&] { l.compile({.device_memory_limit = -1}); });
  EXPECT_EQ(neg.code(), fy::ErrorCode::invalid_argument);
}

TEST(Jit, TextRoundTripsThroughParseProgram) {
  auto f = fy::jit([](fy::Tensor x, fy::Tensor w) {
    return fy::sum(fy::tanh(fy::matmul(x, w)), {1}) / 3.0;
  }, "layer");
  auto lowered = f.lower(fy::ShapeDtype{{4, 5}}, fy::ShapeDtype{{5, 3}});
  auto text = lowered.as_text();
  auto parsed = fy::parse_program(text);
  EXPECT_EQ(parsed.as_text(), text);
  // And the parsed program runs to the same numbers.
  auto x = fy::full({4, 5}, 0.1), w = fy::full({5, 3}, 0.2);
  EXPECT_TRUE(parsed.compile()(x, w)[0].equals(lowered.compile()(x, w)[0]));
}

TEST(Jit, ParseProgramRejectsBadPrograms) {
  auto syntax = error_of([] { fy::parse_program("program @p(%0: f32[3]) {\n  %1 = sin %0 : \n}"); });
  EXPECT_EQ(syntax.code(), fy::ErrorCode::invalid_argument);
  EXPECT_THAT(syntax.message(), HasSubstr("line "));
  // Well-formed text whose declared type disagrees with the shape rule fails verification.
  auto typed = error_of([] { fy::parse_program("program @p(%0: f32[3]) {\n  %1 = sin %0 : f32[4]\n  return %1\n}\n"); });
  EXPECT_EQ(typed.code(), fy::ErrorCode::invalid_argument);
  EXPECT_THAT(typed.message(), HasSubstr("f32[4]"));
}

}  // namespace
