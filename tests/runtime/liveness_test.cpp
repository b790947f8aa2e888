// Liveness is proven, not assumed: a plan corrupted to release a buffer before its last reader is
// caught. In checked mode the released bytes hold NaNs, so the result changes (without it the stale
// bytes happen to survive and the answer is silently right); in the AddressSanitizer build the
// released bytes are poisoned, so the read is an ASan report. Overlapping buffers are INTERNAL.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/memory_plan.h"
#include "compiler/pipeline.h"
#include "ferry/ferry.h"
#include "ir/parser.h"
#include "runtime/copy_queue.h"
#include "runtime/executable.h"
#include "support/error_of.h"

namespace ferry {
namespace {

// sin(x) is read by the mul two equations later: its buffer lives across cos.
const char* kProgram = R"(program @main(%0: f32[64]) {
  %1 = sin %0 : f32[64]
  %2 = cos %0 : f32[64]
  %3 = mul %1, %2 : f32[64]
  %4 = reduce_sum[axes=[0]] %3 : f32[]
  return %4
}
)";

struct Planned {
  std::shared_ptr<const ir::Program> program;
  std::shared_ptr<compiler::MemoryPlan> plan;
};

Planned plan_of(const char* text) {
  Planned p;
  compiler::Target target;
  target.fuse = false;  // the buffers of sin and cos are what these tests move and release
  p.program = compiler::run_pipeline(*ir::parse(text), target);
  p.plan = std::make_shared<compiler::MemoryPlan>(*compiler::plan_memory(*p.program, false));
  return p;
}

// The arena buffer of the value the first equation defines (sin's).
int buffer_of_first_value(const Planned& p) {
  const compiler::Slot& s = p.plan->slots[static_cast<size_t>(p.program->equations.at(0).outputs.at(0))];
  EXPECT_EQ(s.where, compiler::Slot::Where::arena);
  return s.buffer;
}

// Releases buffer b right after the equation that defines it, before its last reader.
void release_early(compiler::MemoryPlan& plan, int b) {
  const compiler::Buffer& buf = plan.buffers[static_cast<size_t>(b)];
  ASSERT_GT(buf.end, buf.start) << "the buffer must be read after it is made";
  auto& late = plan.release_after[static_cast<size_t>(buf.end)];
  late.erase(std::find(late.begin(), late.end(), b));
  plan.release_after[static_cast<size_t>(buf.start)].push_back(b);
}

float run(const Planned& p, bool checked) {
  runtime::Executable exe(p.program, p.plan, "cpu", runtime::ExecutableOptions{{}, checked});
  runtime::CopyQueue copies;
  ExecutionStats stats;
  return exe.run({full({64}, 0.5)}, stats, copies).at(0).to_vector<float>().at(0);
}

const float kWant = 64 * std::sin(0.5f) * std::cos(0.5f);

bool asan_build() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#else
  return false;
#endif
}

TEST(Liveness, TheRightPlanGivesTheRightAnswerInCheckedMode) {
  Planned p = plan_of(kProgram);
  EXPECT_NEAR(run(p, /*checked=*/true), kWant, 1e-4);
  EXPECT_NEAR(run(p, /*checked=*/false), kWant, 1e-4);
}

TEST(Liveness, CheckedModeCatchesABufferReleasedEarly) {
  if (asan_build()) GTEST_SKIP() << "the ASan build reports the read itself (AsanReportsABufferReleasedEarly)";
  Planned p = plan_of(kProgram);
  release_early(*p.plan, buffer_of_first_value(p));
  // The stale bytes survive: without checked mode the bug gives the right answer by luck.
  EXPECT_NEAR(run(p, /*checked=*/false), kWant, 1e-4);
  EXPECT_TRUE(std::isnan(run(p, /*checked=*/true)));
}

TEST(Liveness, AsanReportsABufferReleasedEarly) {
  if (!asan_build()) GTEST_SKIP() << "needs the AddressSanitizer build (tools/sanitize.sh asan)";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Planned p = plan_of(kProgram);
  release_early(*p.plan, buffer_of_first_value(p));
  EXPECT_DEATH(run(p, /*checked=*/false), "use-after-poison");
}

TEST(Liveness, OverlappingLiveBuffersAreInternal) {
  Planned p = plan_of(kProgram);
  // cos's buffer moved onto sin's while both are live.
  const compiler::Slot& cos_slot = p.plan->slots[static_cast<size_t>(p.program->equations.at(1).outputs.at(0))];
  p.plan->buffers[static_cast<size_t>(cos_slot.buffer)].offset =
      p.plan->buffers[static_cast<size_t>(buffer_of_first_value(p))].offset;
  Error e = testing::error_of([&] { run(p, false); });
  EXPECT_EQ(e.code(), ErrorCode::internal);
  EXPECT_THAT(e.message(), ::testing::HasSubstr("overlaps live buffer"));
}

}  // namespace
}  // namespace ferry
