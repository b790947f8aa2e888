// policies::automatic where the checkpoint leaves it nothing to choose: the loss inside the
// checkpoint, so the backward pass has no value of the forward pass to save, offload or recompute.
// Under a limit no plan of automatic's fits, and the error says why (before, the plain
// RESOURCE_EXHAUSTED of the plan read as if the planner had tried and failed).
#include <gtest/gtest.h>

#include <vector>

#include "ferry/ferry.h"

namespace fy = ferry;

namespace {

fy::Lowered whole_loss_checkpointed(const fy::Policy& policy) {
  auto f = fy::jit([policy](fy::Tensor x, std::vector<fy::Tensor> w) {
    return fy::grad([&](std::vector<fy::Tensor> ws) {
      auto loss = [](std::vector<fy::Tensor> in) {
        fy::Tensor h = in[0];
        for (size_t l = 1; l < in.size(); ++l) h = fy::tanh(fy::matmul(h, in[l]));
        return std::vector<fy::Tensor>{fy::sum(h * h)};
      };
      std::vector<fy::Tensor> in{x};
      in.insert(in.end(), ws.begin(), ws.end());
      return fy::checkpoint(loss, policy)(in)[0];
    })(w);
  });
  return f.lower(fy::ShapeDtype{{128, 96}}, std::vector<fy::ShapeDtype>(5, fy::ShapeDtype{{96, 96}}));
}

TEST(AutomaticWithNothingToChoose, UnderALimitNoPlanFitsAndTheErrorSaysWhy) {
  const fy::Lowered lowered = whole_loss_checkpointed(fy::policies::automatic);
  const int64_t peak = lowered.compile().memory_analysis().peak_memory_in_bytes;
  // automatic makes the plan nothing_saveable makes: the forward pass runs twice either way.
  EXPECT_EQ(peak, whole_loss_checkpointed(fy::policies::nothing_saveable).compile().memory_analysis().peak_memory_in_bytes);
  try {
    (void)lowered.compile({.device_memory_limit = peak - 1024});
    FAIL() << "a plan fit under a limit below the only plan's peak";
  } catch (const fy::Error& e) {
    EXPECT_EQ(e.code(), fy::ErrorCode::resource_exhausted);
    EXPECT_NE(e.message().find("nothing to choose"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("at its peak"), std::string::npos) << e.message();  // and the plan's own account
  }
  // Where the limit holds the plan, it compiles.
  EXPECT_LE(lowered.compile({.device_memory_limit = peak}).memory_analysis().peak_memory_in_bytes, peak);
}

}  // namespace
