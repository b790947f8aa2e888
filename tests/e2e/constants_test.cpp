// Constants and identities end to end: differentiated programs hold no activation-sized buffer of
// constants (the simplify pass), which lowers their planned peak; runs are checked against the plan.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "ferry/ferry.h"
#include "ir/parser.h"
#include "support/memory_check.h"

namespace fy = ferry;

namespace {

constexpr int64_t kBatch = 1024, kWidth = 128;
constexpr int64_t kActivation = kBatch * kWidth * 4;  // bytes of one f32[1024,128]

// Calls f on every equation of p and of its bodies.
void each_equation(const fy::ir::Program& p, const std::function<void(const fy::ir::Program&, const fy::ir::Equation&)>& f) {
  for (const fy::ir::Equation& eq : p.equations) {
    f(p, eq);
    for (const auto& body : eq.subprograms) each_equation(*body, f);
  }
}

// Constants and broadcasts of scalars in the compiled program that take more than one element.
int full_size_splats(const fy::Compiled& c) {
  int n = 0;
  each_equation(*fy::ir::parse(c.as_text()), [&](const fy::ir::Program& p, const fy::ir::Equation& eq) {
    bool splat = eq.prim == fy::prim::constant ||
                 (eq.prim == fy::prim::broadcast_in_dim && p.type(eq.inputs[0]).rank() == 0);
    if (splat && p.type(eq.outputs[0]).num_elements() > 1) ++n;
  });
  return n;
}

TEST(Constants, TanhVjpHoldsNoActivationSizedConstant) {
  // d/dx sum(tanh(x)) = 1 * (1 - t*t): before the simplify pass the ones of `1 - t*t` and the
  // broadcast cotangent were each an f32[1024,128] buffer, and the peak was 1,572,928 bytes (x,
  // the ones, the result); now it is 1,048,640 (x, the result, one 64-byte scalar).
  auto f = fy::jit([](fy::Tensor x) { return fy::grad([](fy::Tensor x) { return fy::sum(fy::tanh(x)); })(x); });
  fy::Compiled c = f.lower(fy::ShapeDtype{{kBatch, kWidth}}).compile();
  EXPECT_EQ(full_size_splats(c), 0) << c.as_text();
  fy::MemoryStats m = c.memory_analysis();
  EXPECT_LT(m.peak_memory_in_bytes, 1'310'720);  // between the two: 1.25 MiB
  EXPECT_LT(m.temp_size_in_bytes, kActivation);

  fy::Array x = fy::full({kBatch, kWidth}, 0.5);
  std::vector<fy::Array> g = fy::testing::run_checked(c, {x});
  const float t = std::tanh(0.5f);  // the kernel's tanh is within 3.5 ulp of libm's (vector_math.h)
  for (float v : g[0].to_vector<float>()) ASSERT_NEAR(v, 1.0f - t * t, 8 * 2 * t * std::numeric_limits<float>::epsilon());
}

TEST(Constants, DenseTanhLayerGradientNeedsOneActivationLess) {
  // grad of sum(h*h), h = tanh(x @ w), by w: before, 2,162,688 bytes at the peak; now 1,638,464
  // (the ones of 1 - h*h and the broadcast cotangent no longer take a buffer each).
  auto f = fy::jit([](fy::Tensor x, fy::Tensor w) {
    return fy::grad([&](fy::Tensor w) {
      fy::Tensor h = fy::tanh(fy::matmul(x, w));
      return fy::sum(h * h);
    })(w);
  });
  fy::Compiled c = f.lower(fy::ShapeDtype{{kBatch, kWidth}}, fy::ShapeDtype{{kWidth, kWidth}}).compile();
  EXPECT_EQ(full_size_splats(c), 0) << c.as_text();
  EXPECT_LT(c.memory_analysis().peak_memory_in_bytes, 1'900'000);

  // x = 1/128, w = 1: h = tanh(1) everywhere, and each gradient entry sums 2h(1-h^2)/128 over the
  // batch.
  std::vector<fy::Array> g = fy::testing::run_checked(c, {fy::full({kBatch, kWidth}, 1.0 / kWidth), fy::ones({kWidth, kWidth})});
  const double h = std::tanh(1.0), want = kBatch * 2 * h * (1 - h * h) / kWidth;
  for (float v : g[0].to_vector<float>()) ASSERT_NEAR(v, want, want * 1e-5);
}

}  // namespace
