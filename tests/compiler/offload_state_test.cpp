#include "compiler/offload_state.h"

#include <gtest/gtest.h>

#include "ir/parser.h"
#include "ir/printer.h"

namespace ferry::compiler {
namespace {

// A parameter %0 and a moment %1, both donated; the gradient %2 is not.
constexpr const char* kStep =
    "program @main(%0: f32[4], %1: f32[4], %2: f32[4]) {\n"
    "  %3 = mul %1, %2 : f32[4]\n"
    "  %4 = sin %3 : f32[4]\n"
    "  %5 = add %0, %4 : f32[4]\n"
    "  return %5, %3, %4\n"
    "}\n";

TEST(OffloadState, CandidatesPairEachWithItsNearestNewValueReadLastFirst) {
  auto p = ir::parse(kStep);
  const std::vector<char> donated{1, 1, 0};
  std::vector<StateCandidate> c = state_candidates(*p, donated);
  ASSERT_EQ(c.size(), 2u);
  // The parameter is read last (by equation 2), so it comes first; its new value is output 0.
  EXPECT_EQ(c[0].input, 0u);
  EXPECT_EQ(c[0].output, 0u);
  EXPECT_EQ(c[0].first_read, 2u);
  // The moment's nearest new value is %3 (output 1), not %4 or %5, further from it.
  EXPECT_EQ(c[1].input, 1u);
  EXPECT_EQ(c[1].output, 1u);
  EXPECT_EQ(c[1].bytes, 16);
  // Without donation there is no state; a host input is none either.
  EXPECT_TRUE(state_candidates(*p, std::vector<char>{0, 0, 0}).empty());
}

TEST(OffloadState, FetchBeforeTheFirstReaderAndCopyBackAfterTheNewValue) {
  auto p = ir::parse(kStep);
  std::vector<StateCandidate> c = state_candidates(*p, std::vector<char>{1, 1, 0});
  offload_state(*p, std::span(c).last(1));  // the moment
  EXPECT_EQ(ir::print(*p),
            "program @main(%0: f32[4], %1: f32[4]{pinned_host}, %2: f32[4]) {\n"
            "  %3 = device_put[dst=device] %1 : f32[4]\n"
            "  %4 = mul %3, %2 : f32[4]\n"
            "  %5 = device_put[dst=pinned_host] %4 : f32[4]{pinned_host}\n"
            "  %6 = sin %4 : f32[4]\n"
            "  %7 = add %0, %6 : f32[4]\n"
            "  return %7, %5, %6\n"
            "}\n");
}

}  // namespace
}  // namespace ferry::compiler
