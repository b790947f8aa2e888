// Checkpoint decisions and the rematerialized mark in the IR text: printed, parsed back, rejected
// when malformed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ferry/error.h"
#include "ir/parser.h"
#include "ir/printer.h"

namespace ferry::ir {
namespace {

TEST(Annotations, RoundTrip) {
  const std::string text =
      "program @main(%0: f32[3]) {\n"
      "  %1 = sin %0 : f32[3] !save\n"
      "  %2 = cos %1 : f32[3] @\"c\" !recompute\n"
      "  %3 = exp %2 : f32[3] !offload(device,pinned_host)\n"
      "  %4 = neg %3 : f32[3] !remat\n"
      "  %5 = abs %4 : f32[3] !recompute !remat\n"
      "  return %5\n"
      "}\n";
  auto p = parse(text);
  EXPECT_EQ(p->equations[0].decision.kind, RematDecision::Kind::save);
  EXPECT_EQ(p->equations[1].name, "c");
  EXPECT_EQ(p->equations[2].decision.kind, RematDecision::Kind::offload);
  EXPECT_EQ(p->equations[2].decision.dst, MemoryKind::pinned_host);
  EXPECT_TRUE(p->equations[3].rematerialized);
  EXPECT_EQ(p->equations[3].decision.kind, RematDecision::Kind::none);
  EXPECT_EQ(print(*p), text);
}

TEST(Annotations, MalformedOnesAreRejectedWithAPosition) {
  auto bad = [](const std::string& annotation) {
    try {
      parse("program @main(%0: f32[3]) {\n  %1 = sin %0 : f32[3]" + annotation + "\n  return %1\n}\n");
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
      return e.message();
    }
    return std::string("<parsed>");
  };
  EXPECT_THAT(bad(" !keep"), ::testing::HasSubstr("line 2, column 25: unknown annotation '!keep'"));
  EXPECT_THAT(bad(" !save !recompute"), ::testing::HasSubstr("at most one of"));
  EXPECT_THAT(bad(" !remat !remat"), ::testing::HasSubstr("'!remat' given twice"));
  EXPECT_THAT(bad(" !offload(device)"), ::testing::HasSubstr("line 2"));
  EXPECT_THAT(bad(" !offload(device,moon)"), ::testing::HasSubstr("unknown memory kind 'moon'"));
}

}  // namespace
}  // namespace ferry::ir
