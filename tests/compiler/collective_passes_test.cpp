// lower_collectives (a collective that exchanges one contiguous block per process becomes an
// asynchronous start/done pair) and place_collectives (starts early enough to hide the exchange,
// dones and what needs their results late; under a device limit only where that costs no memory). Golden IR text; each result
// verifies and its text round-trips.
#include <gtest/gtest.h>

#include <string>

#include "compiler/lower_collectives.h"
#include "compiler/place_collectives.h"
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

TEST(LowerCollectives, ContiguousExchangesBecomeAsynchronousPairsTheOthersStay) {
  EXPECT_EQ(run("program @main(%0: f32[4,3], %1: f32[1,6]) {\n"
                "  %2 = psum[axis_size=2] %0 : f32[4,3]\n"
                "  %3 = all_gather[axis_size=2, dimension=0, tiled=true] %0 : f32[8,3]\n"
                "  %4 = all_gather[axis_size=2, dimension=1, tiled=false] %0 : f32[4,2,3]\n"
                "  %5 = psum_scatter[axis_size=2, dimension=1, tiled=true] %1 : f32[1,3]\n"
                "  %6 = axis_index[axis_size=2] : i32[]\n"
                "  return %2, %3, %4, %5, %6\n"
                "}\n",
                lower_collectives, true),
            "program @main(%0: f32[4,3], %1: f32[1,6]) {\n"
            "  %2 = psum_start[axis_size=2] %0 : f32[4,3]\n"
            "  %3 = collective_done %2, %0 : f32[4,3]\n"
            "  %4 = all_gather_start[axis_size=2, dimension=0, tiled=true] %0 : f32[8,3]\n"
            "  %5 = collective_done %4, %0 : f32[8,3]\n"
            "  %6 = all_gather[axis_size=2, dimension=1, tiled=false] %0 : f32[4,2,3]\n"  // rows interleave
            "  %7 = psum_scatter_start[axis_size=2, dimension=1, tiled=true] %1 : f32[1,3]\n"  // outer size 1
            "  %8 = collective_done %7, %1 : f32[1,3]\n"
            "  %9 = axis_index[axis_size=2] : i32[]\n"
            "  return %3, %5, %6, %8, %9\n"
            "}\n");
  const std::string plain = "program @main(%0: f32[4]) {\n  %1 = sin %0 : f32[4]\n  return %1\n}\n";
  EXPECT_EQ(run(plain, lower_collectives, false), plain);
}

// Two gradients' all-reduces: each starts as soon as its gradient exists and is waited for only
// where its (scaled) result is needed, at the end, so both run beside the work in between.
const char* kTwoGradients =
    "program @main(%0: f32[64], %1: f32[64]) {\n"
    "  %2 = sin %0 : f32[64]\n"
    "  %3 = psum_start[axis_size=2] %2 : f32[64]\n"
    "  %4 = collective_done %3, %2 : f32[64]\n"
    "  %5 = mul %4, %4 : f32[64]\n"
    "  %6 = cos %1 : f32[64]\n"
    "  %7 = exp %6 : f32[64]\n"
    "  %8 = psum_start[axis_size=2] %7 : f32[64]\n"
    "  %9 = collective_done %8, %7 : f32[64]\n"
    "  return %5, %9\n"
    "}\n";

// Without a limit each done goes with its reader to the end, and each start as late as still hides
// its exchange behind the compute before its done: at the model's rates exp alone hides the first
// all-reduce's 256 bytes, so it starts after cos; over a slow interconnect nothing hides it, so it
// starts as soon as its operand exists.
TEST(PlaceCollectives, WithoutALimitStartsHideTheExchangeAndDonesGoWithTheirReadersLate) {
  EXPECT_EQ(run(kTwoGradients, [](ir::Program& p) { return place_collectives(p, Target{}); }, true),
            "program @main(%0: f32[64], %1: f32[64]) {\n"
            "  %2 = sin %0 : f32[64]\n"
            "  %3 = cos %1 : f32[64]\n"
            "  %4 = psum_start[axis_size=2] %2 : f32[64]\n"
            "  %5 = exp %3 : f32[64]\n"
            "  %6 = psum_start[axis_size=2] %5 : f32[64]\n"
            "  %7 = collective_done %4, %2 : f32[64]\n"
            "  %8 = mul %7, %7 : f32[64]\n"
            "  %9 = collective_done %6, %5 : f32[64]\n"
            "  return %8, %9\n"
            "}\n");
  Target slow;
  slow.rates.interconnect_bytes_per_s = 1;
  EXPECT_EQ(run(kTwoGradients, [&](ir::Program& p) { return place_collectives(p, slow); }, true),
            "program @main(%0: f32[64], %1: f32[64]) {\n"
            "  %2 = sin %0 : f32[64]\n"
            "  %3 = psum_start[axis_size=2] %2 : f32[64]\n"
            "  %4 = cos %1 : f32[64]\n"
            "  %5 = exp %4 : f32[64]\n"
            "  %6 = psum_start[axis_size=2] %5 : f32[64]\n"
            "  %7 = collective_done %3, %2 : f32[64]\n"
            "  %8 = mul %7, %7 : f32[64]\n"
            "  %9 = collective_done %6, %5 : f32[64]\n"
            "  return %8, %9\n"
            "}\n");
}

TEST(PlaceCollectives, UnderALimitOverlapThatCostsMemoryIsLeftOut) {
  Target limited;
  limited.device_memory_limit = 1 << 20;
  // Holding the first exchange's operand and result over cos and exp raises the peak: the order
  // stays as scheduled.
  EXPECT_EQ(run(kTwoGradients, [&](ir::Program& p) { return place_collectives(p, limited); }, false), kTwoGradients);
}

}  // namespace
}  // namespace ferry::compiler
