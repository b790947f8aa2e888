// Checkpoint decisions and the rematerialized mark in the IR text: printed, parsed back, rejected
// when malformed, and refused by the verifier where the policy path would refuse them or nothing
// reads them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ferry/error.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "prims/verify.h"

namespace ferry::ir {
namespace {

using prims::verify;  // with the primitives' shape rules

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

// The verifier's verdict on a parsed program: "" when it verifies, else the message.
std::string verdict(const std::string& text) {
  auto p = parse(text);
  try {
    verify(*p);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    return e.message();
  }
  return "";
}

// `annotation` on the equation of a checkpoint's body that names a device value.
std::string in_checkpoint(const std::string& annotation) {
  return "program @main(%0: f32[3]) {\n"
         "  %1 = checkpoint[prevent_cse=true] %0 : f32[3] @\"policy\" {\n"
         "    program @checkpoint_body(%0: f32[3]) {\n"
         "      %1 = cos %0 : f32[3]" + annotation + "\n"
         "      return %1\n"
         "    }\n"
         "  }\n"
         "  return %1\n"
         "}\n";
}

std::string at_top_level(const std::string& annotation) {
  return "program @main(%0: f32[3]) {\n  %1 = sin %0 : f32[3]" + annotation + "\n  return %1\n}\n";
}

// Issue 32: the verifier accepted and ignored `!offload(pinned_host,device)` on a device value and
// `!offload ... !remat !auto` on a plain equation. The policy path refuses an offload from a kind
// the value does not live in; differentiation reads decisions only in bodies (a checkpoint's, and
// the bodies inside one), and !auto only on a recomputation.
TEST(Annotations, TheVerifierRefusesDecisionsThatCannotTakeEffect) {
  EXPECT_EQ(verdict(in_checkpoint(" !offload(device,pinned_host)")), "");
  EXPECT_EQ(verdict(in_checkpoint(" !save")), "");
  EXPECT_THAT(verdict(in_checkpoint(" !offload(pinned_host,device)")),
              ::testing::HasSubstr("!offload(pinned_host,device) offloads from pinned_host, but output 0 lives in device"));
  EXPECT_THAT(verdict(at_top_level(" !offload(device,pinned_host) !remat !auto")),
              ::testing::HasSubstr("%1 = sin: carries a checkpoint policy's decision"));
  EXPECT_THAT(verdict(at_top_level(" !save")), ::testing::HasSubstr("carries a checkpoint policy's decision"));
  EXPECT_THAT(verdict(at_top_level(" !auto")), ::testing::HasSubstr("!auto marks a recomputation (!remat)"));
  EXPECT_THAT(verdict(in_checkpoint(" !auto")), ::testing::HasSubstr("!auto marks a recomputation (!remat)"));
  // What differentiation makes: recomputations at the top level, marked for the automatic planner.
  EXPECT_EQ(verdict(at_top_level(" !remat")), "");
  EXPECT_EQ(verdict(at_top_level(" !remat !auto")), "");
}

// Issue 32: a cond with a bool predicate and one branch verified, and then ran branch 0 (the false
// branch) when the predicate was true. A bool picks one of exactly two; an i32 index any number.
TEST(Annotations, TheVerifierRefusesABoolCondWithoutTwoBranches) {
  auto cond = [](const std::string& pred_type, int branches) {
    std::string text = "program @main(%0: " + pred_type + ", %1: f32[3]) {\n  %2 = cond %0, %1 : f32[3] {\n";
    for (int b = 0; b < branches; ++b)
      text += "    program @b" + std::to_string(b) + "(%0: f32[3]) {\n      %1 = sin %0 : f32[3]\n      return %1\n    }\n";
    return text + "  }\n  return %2\n}\n";
  };
  EXPECT_THAT(verdict(cond("bool[]", 1)),
              ::testing::HasSubstr("a bool predicate picks one of two branches (false, then true), but 1 is given"));
  EXPECT_THAT(verdict(cond("bool[]", 3)), ::testing::HasSubstr("but 3 are given"));
  EXPECT_EQ(verdict(cond("bool[]", 2)), "");
  EXPECT_EQ(verdict(cond("i32[]", 1)), "");
  EXPECT_EQ(verdict(cond("i32[]", 3)), "");
}

}  // namespace
}  // namespace ferry::ir
