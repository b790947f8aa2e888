// The passes that turn memory-kind decisions into the program that runs: lower_copies (device_put
// between kinds -> copy_start/copy_done), place_copies (where each half goes, by the cost model) and
// materialize_outputs (every output its own buffer). Golden IR text; each result verifies and its
// text round-trips.
#include <gtest/gtest.h>

#include <string>

#include "compiler/lower_copies.h"
#include "compiler/materialize_outputs.h"
#include "compiler/place_copies.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "prims/verify.h"

namespace ferry::compiler {
namespace {

template <class Pass> std::string run(const std::string& text, Pass pass, bool expect_change) {
  auto p = ir::parse(text);
  EXPECT_EQ(pass(*p), expect_change);
  prims::verify(*p);
  std::string out = ir::print(*p);
  EXPECT_EQ(ir::print(*ir::parse(out)), out);
  return out;
}

TEST(LowerCopies, ACopyBetweenKindsBecomesAnAsynchronousPairAndOneWithinAKindStays) {
  EXPECT_EQ(run("program @main(%0: f32[8]) {\n"
                "  %1 = sin %0 : f32[8]\n"
                "  %2 = device_put[dst=pinned_host] %1 : f32[8]{pinned_host}\n"
                "  %3 = device_put[dst=device] %1 : f32[8]\n"
                "  %4 = device_put[dst=device] %2 : f32[8]\n"
                "  %5 = add %3, %4 : f32[8]\n"
                "  return %5\n"
                "}\n",
                lower_copies, true),
            "program @main(%0: f32[8]) {\n"
            "  %1 = sin %0 : f32[8]\n"
            "  %2 = copy_start[dst=pinned_host] %1 : f32[8]{pinned_host}\n"
            "  %3 = copy_done %2, %1 : f32[8]{pinned_host}\n"
            "  %4 = device_put[dst=device] %1 : f32[8]\n"
            "  %5 = copy_start[dst=device] %3 : f32[8]\n"
            "  %6 = copy_done %5, %3 : f32[8]\n"
            "  %7 = add %4, %6 : f32[8]\n"
            "  return %7\n"
            "}\n");
}

TEST(LowerCopies, BodiesAreLoweredAndAProgramWithoutCopiesIsUnchanged) {
  std::string scan =
      "program @main(%0: f32[4], %1: f32[3,4]) {\n"
      "  %2, %3 = scan[length=3, reverse=false, num_carry=1, num_xs=1] %0, %1 : f32[4], f32[3,4]{pinned_host} {\n"
      "    program @body(%0: f32[4], %1: f32[4]) {\n"
      "      %2 = mul %0, %1 : f32[4]\n"
      "      %3 = device_put[dst=pinned_host] %2 : f32[4]{pinned_host}\n"
      "      return %2, %3\n"
      "    }\n"
      "  }\n"
      "  return %2, %3\n"
      "}\n";
  std::string out = run(scan, lower_copies, true);
  EXPECT_NE(out.find("      %3 = copy_start[dst=pinned_host] %2 : f32[4]{pinned_host}\n"
                     "      %4 = copy_done %3, %2 : f32[4]{pinned_host}\n"
                     "      return %2, %4\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("device_put"), std::string::npos) << out;
  std::string plain = "program @main(%0: f32[4]) {\n  %1 = sin %0 : f32[4]\n  return %1\n}\n";
  EXPECT_EQ(run(plain, lower_copies, false), plain);
}

TEST(MaterializeOutputs, AnInputOrARepeatedOutputIsCopiedIntoItsOwnBuffer) {
  EXPECT_EQ(run("program @main(%0: f32[4], %1: f32[4]{pinned_host}) {\n"
                "  %2 = sin %0 : f32[4]\n"
                "  return %2, %0, %2, %1\n"
                "}\n",
                materialize_outputs, true),
            "program @main(%0: f32[4], %1: f32[4]{pinned_host}) {\n"
            "  %2 = sin %0 : f32[4]\n"
            "  %3 = device_put[dst=device] %0 : f32[4]\n"
            "  %4 = device_put[dst=device] %2 : f32[4]\n"
            "  %5 = device_put[dst=pinned_host] %1 : f32[4]{pinned_host}\n"
            "  return %2, %3, %4, %5\n"
            "}\n");
  std::string distinct = "program @main(%0: f32[4]) {\n  %1 = sin %0 : f32[4]\n  %2 = cos %0 : f32[4]\n  return %1, %2\n}\n";
  EXPECT_EQ(run(distinct, materialize_outputs, false), distinct);
}

TEST(MaterializeOutputs, ABodyThatReturnsItsCarryUnchangedGetsACopy) {
  std::string out = run(
      "program @main(%0: f32[4], %1: f32[3,4]) {\n"
      "  %2, %3 = scan[length=3, reverse=false, num_carry=1, num_xs=1] %0, %1 : f32[4], f32[3,4] {\n"
      "    program @body(%0: f32[4], %1: f32[4]) {\n"
      "      return %0, %1\n"
      "    }\n"
      "  }\n"
      "  return %2, %3\n"
      "}\n",
      materialize_outputs, true);
  EXPECT_NE(out.find("    program @body(%0: f32[4], %1: f32[4]) {\n"
                     "      %2 = device_put[dst=device] %0 : f32[4]\n"
                     "      %3 = device_put[dst=device] %1 : f32[4]\n"
                     "      return %2, %3\n"),
            std::string::npos)
      << out;
}

// Rates that make placement arithmetic easy: every sin of f32[4] takes 4 s (4 FLOPs at 1 FLOP/s;
// transcendentals and memory traffic free); the link moves 1 byte per second, so a copy of an
// f32[4] (16 bytes) takes as long as four of them.
Target slow_link() {
  Target t;
  t.rates.link_bandwidth_bytes_per_s = 1;
  t.rates.vector_flops_per_s = 1;
  t.rates.transcendentals_per_s = 1e30;
  t.rates.memory_bytes_per_s = 1e30;
  return t;
}

TEST(PlaceCopies, AnOffloadStartsAtItsSourceAndIsDoneOnceComputeHidIt) {
  auto place = [](ir::Program& p) { return place_copies(p, slow_link()); };
  // As scheduled, the offload of %1 runs right before its host value is returned; placed, it starts
  // as soon as %1 exists and is done after four sins (16 s of compute hide its 16 s).
  EXPECT_EQ(run("program @main(%0: f32[4]) {\n"
                "  %1 = sin %0 : f32[4]\n"
                "  %2 = sin %1 : f32[4]\n"
                "  %3 = sin %2 : f32[4]\n"
                "  %4 = sin %3 : f32[4]\n"
                "  %5 = sin %4 : f32[4]\n"
                "  %6 = sin %5 : f32[4]\n"
                "  %7 = copy_start[dst=pinned_host] %1 : f32[4]{pinned_host}\n"
                "  %8 = copy_done %7, %1 : f32[4]{pinned_host}\n"
                "  return %6, %8\n"
                "}\n",
                place, true),
            "program @main(%0: f32[4]) {\n"
            "  %1 = sin %0 : f32[4]\n"
            "  %2 = copy_start[dst=pinned_host] %1 : f32[4]{pinned_host}\n"
            "  %3 = sin %1 : f32[4]\n"
            "  %4 = sin %3 : f32[4]\n"
            "  %5 = sin %4 : f32[4]\n"
            "  %6 = sin %5 : f32[4]\n"
            "  %7 = copy_done %2, %1 : f32[4]{pinned_host}\n"
            "  %8 = sin %6 : f32[4]\n"
            "  return %8, %7\n"
            "}\n");
}

TEST(PlaceCopies, AFetchIsDoneRightBeforeItsReaderAndStartsJustEarlyEnough) {
  auto place = [](ir::Program& p) { return place_copies(p, slow_link()); };
  // The fetch of the host argument %1 is read by the last add: it starts four sins before it.
  EXPECT_EQ(run("program @main(%0: f32[4], %1: f32[4]{pinned_host}) {\n"
                "  %2 = copy_start[dst=device] %1 : f32[4]\n"
                "  %3 = copy_done %2, %1 : f32[4]\n"
                "  %4 = sin %0 : f32[4]\n"
                "  %5 = sin %4 : f32[4]\n"
                "  %6 = sin %5 : f32[4]\n"
                "  %7 = sin %6 : f32[4]\n"
                "  %8 = sin %7 : f32[4]\n"
                "  %9 = sin %8 : f32[4]\n"
                "  %10 = add %9, %3 : f32[4]\n"
                "  return %10\n"
                "}\n",
                place, true),
            "program @main(%0: f32[4], %1: f32[4]{pinned_host}) {\n"
            "  %2 = sin %0 : f32[4]\n"
            "  %3 = sin %2 : f32[4]\n"
            "  %4 = copy_start[dst=device] %1 : f32[4]\n"
            "  %5 = sin %3 : f32[4]\n"
            "  %6 = sin %5 : f32[4]\n"
            "  %7 = sin %6 : f32[4]\n"
            "  %8 = sin %7 : f32[4]\n"
            "  %9 = copy_done %4, %1 : f32[4]\n"
            "  %10 = add %8, %9 : f32[4]\n"
            "  return %10\n"
            "}\n");
}

TEST(PlaceCopies, ACopyWithNoComputeToHideBehindStaysWhereItIs) {
  auto place = [](ir::Program& p) { return place_copies(p, slow_link()); };
  std::string text =
      "program @main(%0: f32[4]) {\n"
      "  %1 = sin %0 : f32[4]\n"
      "  %2 = copy_start[dst=pinned_host] %1 : f32[4]{pinned_host}\n"
      "  %3 = copy_done %2, %1 : f32[4]{pinned_host}\n"
      "  return %3\n"
      "}\n";
  EXPECT_EQ(run(text, place, false), text);
}

}  // namespace
}  // namespace ferry::compiler
