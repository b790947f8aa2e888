// The limits tracing shares with the parser, Array and safetensors (ir/limits.h): whatever traces
// prints as text that parses back (jit.h's promise), and what the text refuses, tracing refuses.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "ferry/ferry.h"
#include "support/error_of.h"

namespace fy = ferry;
using ::testing::HasSubstr;
using fy::testing::error_of;

namespace {

// The lowered program's text parses back to the same text.
void expect_round_trip(const fy::Lowered& lowered) {
  const std::string text = lowered.as_text();
  EXPECT_EQ(fy::parse_program(text).as_text(), text);
}

// Issue 32: reshape(x, {0, 2^62, 2^62}) traced, compiled and ran, but its text was refused as "too
// large". A zero-size dimension does not excuse the others anywhere now.
TEST(Limits, SizesTheTextRefusesDoNotTrace) {
  const int64_t big = int64_t{1} << 62;
  fy::Error e = error_of([&] {
    fy::jit([&](fy::Tensor x) { return fy::reshape(x, {0, big, big}); }).lower(fy::ShapeDtype{{0}});
  });
  EXPECT_EQ(e.code(), fy::ErrorCode::invalid_argument);
  EXPECT_THAT(e.message(), HasSubstr("reshape: new_sizes [0,4611686018427387904,4611686018427387904] is too large: "
                                     "more than 2^62 bytes, counting each zero-size dimension as 1"));
  fy::Error arg = error_of([&] { fy::jit([](fy::Tensor x) { return x; }).lower(fy::ShapeDtype{{big, big, 0}}); });
  EXPECT_THAT(arg.message(), HasSubstr("lower: an argument's type: f32[4611686018427387904,4611686018427387904,0] is "
                                       "too large"));
  // At the limit (2^62 bytes counted, none held) it traces, runs, and its text parses back.
  const int64_t half = int64_t{1} << 30;
  auto f = fy::jit([&](fy::Tensor x) { return fy::reshape(x, {half, 0, half}) * 2.0; });
  fy::Lowered lowered = f.lower(fy::ShapeDtype{{0}});
  expect_round_trip(lowered);
  EXPECT_EQ(lowered.compile()(fy::zeros({0}))[0].shape(), (fy::Shape{half, 0, half}));
}

// `depth` scans of one step each, nested, around sin(c).
fy::Tensor nested_scans(const fy::Tensor& c, int depth) {
  if (depth == 0) return fy::sin(c);
  return fy::scan([depth](fy::Tensor d, fy::Tensor) { return std::pair{nested_scans(d, depth - 1), fy::Tensor{}}; },
                  c, fy::Tensor{}, 1)
      .carry;
}

// Issue 32: 300 nested scans ran, but their text was refused as "nested more than 64 levels".
// Tracing refuses what the parser refuses, and what it accepts parses back.
TEST(Limits, NestingTheTextRefusesDoesNotTrace) {
  for (int depth : {65, 300}) {
    fy::Error e = error_of([&] {
      fy::jit([&](fy::Tensor x) { return nested_scans(x, depth); }).lower(fy::ShapeDtype{{2}});
    });
    EXPECT_EQ(e.code(), fy::ErrorCode::invalid_argument) << depth;
    EXPECT_THAT(e.message(), HasSubstr("scan: its body nests subprograms (scan, cond, checkpoint, while_loop, ...) more "
                                       "than 64 levels deep"))
        << depth;
  }
  auto f = fy::jit([](fy::Tensor x) { return nested_scans(x, 64); });
  fy::Lowered lowered = f.lower(fy::ShapeDtype{{2}});
  expect_round_trip(lowered);
  EXPECT_FLOAT_EQ(lowered.compile()(fy::ones({2}))[0].to_vector<float>()[0], std::sin(1.0f));
}

}  // namespace
