// Programs the random-program property test found wrong in partition (tests/property), kept here.
#include <gtest/gtest.h>

#include "ferry/ferry.h"
#include "support/gradient_check.h"

namespace fy = ferry;
using Xs = std::vector<fy::Tensor>;

namespace {

// Found by random program seed 11: inside a scan body, a checkpoint that ignores its input (its
// cotangent is all zeros, depending on no cotangent) after a checkpoint whose backward part
// recomputes. What read the recomputed value was put in the forward part, where that value does not
// exist: "INTERNAL: partition: value %5 is not available in forward".
TEST(PartitionRegression, ZeroCotangentOfANestedCheckpointStaysInTheBackwardPart) {
  for (const fy::Policy& policy : {fy::policies::everything_saveable, fy::policies::nothing_saveable}) {
    auto f = [&](const Xs& p) {
      auto r = fy::scan([&](fy::Tensor c, fy::Tensor x) {
        fy::Tensor b = fy::checkpoint([](fy::Tensor a) { return fy::sin(a) * 2.0; }, policy)(x);
        fy::Tensor o = fy::checkpoint([&](fy::Tensor) { return fy::cos(c); }, policy)(b);
        return std::pair{o, fy::Tensor{}};
      }, p[0], p[1]);
      return fy::sum(r.carry);
    };
    fy::testing::expect_gradients_match(f, fy::testing::random_f64({{2}, {3, 2}}, 5));
  }
}

}  // namespace
