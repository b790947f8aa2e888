// Policies that do nothing say so: a name a policy saves or offloads that no backward pass reads is
// listed by saved_residuals as "unused" and reported by Lowered/Compiled::warnings(); a name the
// backward pass reads is not.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ferry/ferry.h"

namespace fy = ferry;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

namespace {

const fy::Policy kPolicy = fy::policies::save_and_offload_only_these_names(
    {"saved"}, {"offloaded"}, fy::MemoryKind::device, fy::MemoryKind::pinned_host);

// h * 2 reads h for no cotangent that is used (only 2's, which nothing differentiates), and
// sum reads nothing: a name on either value is never needed. sin(h) needs h for its cotangent.
fy::Tensor unneeded_saved(fy::Tensor x) { return fy::sum(fy::checkpoint_name(fy::sin(x), "saved") * 2.0); }
fy::Tensor unneeded_offloaded(fy::Tensor x) { return fy::sum(fy::checkpoint_name(fy::sin(x), "offloaded")); }
fy::Tensor needed_saved(fy::Tensor x) { return fy::sum(fy::sin(fy::checkpoint_name(x * 2.0, "saved"))); }
fy::Tensor needed_offloaded(fy::Tensor x) { return fy::sum(fy::sin(fy::checkpoint_name(x * 2.0, "offloaded"))); }

template <class F> fy::Lowered lowered_grad(F f, const fy::Policy& policy = kPolicy) {
  auto step = fy::jit([f, policy](fy::Tensor x) { return fy::grad(fy::checkpoint(f, policy))(x); });
  return step.lower(fy::ShapeDtype{{4}});
}

// The saved_residuals lines, "decision source".
template <class F> std::vector<std::string> residual_lines(F f) {
  std::vector<std::string> out;
  for (const fy::Residual& r : fy::saved_residuals(fy::checkpoint(f, kPolicy), fy::ShapeDtype{{4}}))
    out.push_back(r.decision + " " + r.source);
  return out;
}

TEST(UnusedNames, ANameTheBackwardPassNeedsGivesNoWarning) {
  for (auto f : {needed_saved, needed_offloaded}) {
    fy::Lowered l = lowered_grad(f);
    EXPECT_THAT(l.warnings(), IsEmpty());
    EXPECT_THAT(l.compile().warnings(), IsEmpty());
  }
  EXPECT_EQ(residual_lines(needed_saved), (std::vector<std::string>{"saved named 'saved'"}));
  EXPECT_EQ(residual_lines(needed_offloaded), (std::vector<std::string>{"offloaded named 'offloaded'"}));
}

TEST(UnusedNames, ASavedNameTheBackwardPassNeverReadsIsReportedOnce) {
  fy::Lowered l = lowered_grad(unneeded_saved);
  ASSERT_EQ(l.warnings().size(), 1u);
  EXPECT_THAT(l.warnings()[0], HasSubstr("named 'saved': not needed by the backward pass"));
  EXPECT_THAT(l.warnings()[0], HasSubstr("policy 'save_and_offload_only_these_names' saves it, which has no effect"));
  EXPECT_EQ(l.compile().warnings(), l.warnings());
  // Nothing is kept for it: the backward pass reads only the argument (sin's VJP reads x).
  EXPECT_EQ(residual_lines(unneeded_saved),
            (std::vector<std::string>{"argument argument 0", "unused named 'saved': not needed by the backward pass"}));
}

TEST(UnusedNames, AnOffloadedNameTheBackwardPassNeverReadsIsReportedOnce) {
  fy::Lowered l = lowered_grad(unneeded_offloaded);
  ASSERT_EQ(l.warnings().size(), 1u);
  EXPECT_THAT(l.warnings()[0], HasSubstr("named 'offloaded': not needed by the backward pass"));
  EXPECT_THAT(l.warnings()[0], HasSubstr("offloads it to pinned_host, which has no effect"));
  EXPECT_EQ(l.compile().memory_analysis().host_temp_size_in_bytes, 0);  // indeed nothing went to host
  EXPECT_EQ(residual_lines(unneeded_offloaded),
            (std::vector<std::string>{"argument argument 0", "unused named 'offloaded': not needed by the backward pass"}));
}

TEST(UnusedNames, OneWarningPerNameHoweverManyCheckpointsAndStepsAndOnlyIfNoneNeedsIt) {
  // Three checkpointed layers tag their (unneeded) output with one name: one warning. In a scan
  // the body is differentiated once per trace: still one.
  auto layer = [](fy::Tensor h) { return fy::checkpoint_name(fy::sin(h), "saved") * 2.0; };
  auto three = fy::jit([&](fy::Tensor x) {
    return fy::grad([&](fy::Tensor x) {
      fy::Tensor h = x;
      for (int i = 0; i < 3; ++i) h = fy::checkpoint(layer, kPolicy)(h);
      return fy::sum(h);
    })(x);
  });
  EXPECT_EQ(three.lower(fy::ShapeDtype{{4}}).warnings().size(), 1u);

  auto scanned = fy::jit([&](fy::Tensor c, fy::Tensor xs) {
    return fy::grad([&](fy::Tensor c) {
      auto step = [&](fy::Tensor h, fy::Tensor x) { return std::pair{fy::checkpoint(layer, kPolicy)(h) + x, fy::Tensor{}}; };
      return fy::sum(fy::scan(step, c, xs).carry);
    })(c);
  });
  std::vector<std::string> w = scanned.lower(fy::ShapeDtype{{4}}, fy::ShapeDtype{{3, 4}}).warnings();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_THAT(w[0], HasSubstr("named 'saved'"));

  // The same name needed in one layer (sin reads it) and not in another: it had an effect.
  auto mixed = fy::jit([&](fy::Tensor x) {
    return fy::grad([&](fy::Tensor x) {
      fy::Tensor h = fy::checkpoint(layer, kPolicy)(x);
      h = fy::checkpoint([](fy::Tensor h) { return fy::sin(fy::checkpoint_name(h * 2.0, "saved")); }, kPolicy)(h);
      return fy::sum(h);
    })(x);
  });
  EXPECT_THAT(mixed.lower(fy::ShapeDtype{{4}}).warnings(), IsEmpty());
}

TEST(UnusedNames, OnlyDecisionsMadeBecauseOfTheNameAreReported) {
  // everything_saveable saves every value, named or not: the unneeded name is not its doing.
  EXPECT_THAT(lowered_grad(unneeded_saved, fy::policies::everything_saveable).warnings(), IsEmpty());
  // A custom policy that offloads by name is.
  fy::Policy by_name([](const fy::Equation& e) -> fy::Decision {
    if (e.name() == "saved") return fy::Offloadable{fy::MemoryKind::device, fy::MemoryKind::pinned_host};
    return fy::Recompute{};
  }, "offload_saved");
  std::vector<std::string> w = lowered_grad(unneeded_saved, by_name).warnings();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_THAT(w[0], HasSubstr("policy 'offload_saved' offloads it to pinned_host"));
}

TEST(UnusedNames, NoWarningsWithoutDifferentiationOrFromText) {
  auto forward_only = fy::jit([](fy::Tensor x) { return fy::checkpoint(unneeded_saved, kPolicy)(x); });
  fy::Lowered l = forward_only.lower(fy::ShapeDtype{{4}});
  EXPECT_THAT(l.warnings(), IsEmpty());
  EXPECT_THAT(fy::parse_program(lowered_grad(unneeded_saved).as_text()).warnings(), IsEmpty());
}

}  // namespace
