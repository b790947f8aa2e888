// Memory planning end to end: peaks per policy, the device limit, offloading that really lowers
// the device peak, and the reports. Every run goes through run_checked (measured == planned).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

#include "ferry/ferry.h"
#include "support/error_of.h"
#include "support/memory_check.h"

namespace fy = ferry;
using ::testing::HasSubstr;

namespace {

constexpr int kLayers = 8, kBatch = 256, kWidth = 32;  // activations dominate the weights

fy::Tensor layer(fy::Tensor x, fy::Tensor w) {
  fy::Tensor h = fy::tanh(fy::matmul(x, w));
  return fy::sin(h) * h;
}

// One training step (loss and gradients) of an MLP whose layers are checkpointed with `policy`.
fy::Compiled train_step(const fy::Policy& policy, int64_t limit = 0) {
  auto step = fy::jit([policy](fy::Tensor x, std::vector<fy::Tensor> ws) {
    return fy::value_and_grad([&](std::vector<fy::Tensor> w) {
      fy::Tensor h = x;
      for (auto& wl : w) h = fy::checkpoint(layer, policy)(h, wl);
      return fy::sum(h);
    })(ws);
  });
  return step.lower(fy::ShapeDtype{{kBatch, kWidth}}, std::vector<fy::ShapeDtype>(kLayers, fy::ShapeDtype{{kWidth, kWidth}}))
      .compile({.device_memory_limit = limit});
}

std::vector<fy::Array> train_args() {
  std::vector<fy::Array> out{fy::full({kBatch, kWidth}, 0.5)};
  for (int l = 0; l < kLayers; ++l) out.push_back(fy::full({kWidth, kWidth}, 0.01 * (l + 1)));
  return out;
}

fy::Decision dot_with_no_batch_dims_offload(const fy::Equation& e) {
  if (e.primitive() == fy::prim::dot_general && e.dot_dims().lhs_batch.empty() && e.dot_dims().rhs_batch.empty())
    return fy::Offloadable{fy::MemoryKind::device, fy::MemoryKind::pinned_host};
  return fy::Recompute{};
}

// Every equation a report or error names ("%17 = tanh") is that equation in the printed program.
void expect_labels_in(const std::string& report, const std::string& program_text) {
  std::regex label(R"((%\d+)(, [^=\n]*)? = ([a-z_]+))");
  int found = 0;
  for (std::sregex_iterator it(report.begin(), report.end(), label), end; it != end; ++it, ++found) {
    std::regex line("\n *" + (*it)[1].str() + "[ ,][^\n]*= " + (*it)[3].str() + "[ \\[]");
    EXPECT_TRUE(std::regex_search(program_text, line)) << it->str() << " is not in\n" << program_text;
  }
  EXPECT_GT(found, 0) << report;
}

TEST(Memory, PeaksFollowThePolicies) {
  using namespace fy::policies;
  int64_t nothing = train_step(nothing_saveable).memory_analysis().peak_memory_in_bytes;
  int64_t dots = train_step(dots_saveable).memory_analysis().peak_memory_in_bytes;
  int64_t everything = train_step(everything_saveable).memory_analysis().peak_memory_in_bytes;
  EXPECT_LT(nothing, dots);
  EXPECT_LT(dots, everything);
  for (const fy::Policy& p : {nothing_saveable, dots_saveable, everything_saveable})
    fy::testing::run_checked(train_step(p), train_args());
}

TEST(Memory, ALimitBetweenTwoPeaksRejectsOnlyTheBiggerPlan) {
  using namespace fy::policies;
  int64_t small = train_step(nothing_saveable).memory_analysis().peak_memory_in_bytes;
  int64_t big = train_step(everything_saveable).memory_analysis().peak_memory_in_bytes;
  int64_t limit = (small + big) / 2;
  fy::Error e = fy::testing::error_of([&] { train_step(everything_saveable, limit); });
  EXPECT_EQ(e.code(), fy::ErrorCode::resource_exhausted);
  EXPECT_THAT(e.message(), HasSubstr("device memory: the plan needs " + std::to_string(big) + " bytes"));
  EXPECT_THAT(e.message(), HasSubstr("but the limit is " + std::to_string(limit) + " bytes"));
  EXPECT_THAT(e.message(), HasSubstr("Largest live buffers at the peak (while %"));
  EXPECT_THAT(e.message(), HasSubstr(":\n  f32["));
  expect_labels_in(e.message(), train_step(everything_saveable).as_text());
  fy::Compiled ok = train_step(nothing_saveable, limit);
  fy::testing::run_checked(ok, train_args());
}

// The first report: a dense model whose saved dot outputs do not fit; offloading them does, with
// the same gradients, and the analysis shows the host side.
TEST(Memory, FirstReportOffloadingLowersThePeakAndFitsTheLimit) {
  using namespace fy::policies;
  fy::Compiled saved = train_step(dots_with_no_batch_dims_saveable);
  fy::Compiled offloaded = train_step(fy::Policy(dot_with_no_batch_dims_offload));
  fy::MemoryStats s = saved.memory_analysis(), o = offloaded.memory_analysis();
  EXPECT_EQ(s.host_temp_size_in_bytes, 0);
  EXPECT_GT(o.host_temp_size_in_bytes, 0);
  EXPECT_LT(o.peak_memory_in_bytes, s.peak_memory_in_bytes);
  // Offloading saves at least the offloaded bytes, less two layers' worth of copies in flight.
  const int64_t layer_bytes = int64_t{kBatch} * kWidth * 4;
  EXPECT_GE(s.peak_memory_in_bytes - o.peak_memory_in_bytes, kLayers * layer_bytes - 2 * layer_bytes)
      << "saved:\n" << saved.memory_report() << "offloaded:\n" << offloaded.memory_report();
  int64_t limit = (o.peak_memory_in_bytes + s.peak_memory_in_bytes) / 2;
  fy::Error e = fy::testing::error_of([&] { train_step(dots_with_no_batch_dims_saveable, limit); });
  EXPECT_EQ(e.code(), fy::ErrorCode::resource_exhausted);
  fy::Compiled fits = train_step(fy::Policy(dot_with_no_batch_dims_offload), limit);
  auto a = fy::testing::run_checked(fits, train_args());
  auto b = fy::testing::run_checked(saved, train_args());
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].equals(b[i])) << "output " << i;
  fy::ExecutionStats stats = fits.execution_stats();
  EXPECT_EQ(stats.bytes_to_host, int64_t{kLayers} * kBatch * kWidth * 4);
  EXPECT_EQ(stats.bytes_to_device, stats.bytes_to_host);
}

// Issue 32: when the peak is the arguments and outputs alone, the RESOURCE_EXHAUSTED text ended
// with an empty "Largest live buffers at the peak" list. It says what the peak is instead.
TEST(Memory, APeakOfArgumentsAndOutputsAloneSaysSo) {
  auto f = fy::jit([](fy::Tensor x) { return fy::sin(x); });
  fy::Error e = fy::testing::error_of([&] { f.lower(fy::ShapeDtype{{1024}}).compile({.device_memory_limit = 100}); });
  EXPECT_EQ(e.code(), fy::ErrorCode::resource_exhausted);
  EXPECT_THAT(e.message(), HasSubstr("temporaries 0 B"));
  EXPECT_THAT(e.message(), HasSubstr(":\n  none: the peak is the arguments and outputs alone, with no temporary live"));
  const std::string report = f.lower(fy::ShapeDtype{{1024}}).compile().memory_report();
  EXPECT_THAT(report, HasSubstr("none: the peak is the arguments and outputs alone"));
}

TEST(Memory, ReportNamesTheLargestBuffersAtThePeak) {
  auto f = fy::jit([](fy::Tensor x) {
    fy::Tensor big = fy::checkpoint_name(fy::exp(fy::broadcast_in_dim(x, {256, 64}, {1})), "wide");
    return fy::sum(big * big);
  });
  fy::Compiled c = f.lower(fy::ShapeDtype{{64}}).compile();
  std::string report = c.memory_report();
  EXPECT_THAT(report, HasSubstr("device: peak "));
  EXPECT_THAT(report, HasSubstr("largest device buffers live at the peak"));
  EXPECT_THAT(report, HasSubstr("f32[256,64] 64.0 KiB, %"));
  expect_labels_in(report, c.as_text());
  fy::testing::run_checked(c, {fy::ones({64})});
}

}  // namespace
