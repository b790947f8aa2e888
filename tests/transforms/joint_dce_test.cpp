// The joint program differentiation partitions holds only live work: VJP rules also emit cotangents
// of operands nothing differentiates (mul's for a literal), and a value only those read must not
// become a residual (in a scan it would be stacked every step and never read).
#include <gtest/gtest.h>

#include "ferry/ferry.h"

namespace fy = ferry;

namespace {

std::vector<std::string> lines(const std::vector<fy::Residual>& residuals) {
  std::vector<std::string> out;
  for (const fy::Residual& r : residuals)
    out.push_back(fy::type_string(r.type.dtype, r.type.shape) + " " + r.decision + " " + r.source);
  return out;
}

TEST(JointDce, AScanStacksOnlyWhatItsBackwardBodyReads) {
  // d/dc (sin(c) * 2 + x) = 2 cos(c): cos(c) is stacked; sin(c), which only the literal's unused
  // cotangent reads, is not.
  auto f = [](fy::Tensor c, fy::Tensor xs) {
    auto step = [](fy::Tensor c, fy::Tensor x) { return std::pair{fy::sin(c) * 2.0 + x, fy::Tensor{}}; };
    return fy::sum(fy::scan(step, c, xs).carry);
  };
  EXPECT_EQ(lines(fy::saved_residuals(f, fy::ShapeDtype{{3}}, fy::ShapeDtype{{5, 3}})),
            (std::vector<std::string>{"f32[5,3] saved output of cos, stacked over 5 steps"}));
}

}  // namespace
