// Offloading for real: the second report's program, per-step streaming inside scans (any slice
// shape, nested scans), a device peak that stays flat as layers are added, and copies that overlap
// compute on the timeline. Every run goes through run_checked (measured == planned).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ferry/ferry.h"
#include "support/gradient_check.h"
#include "support/memory_check.h"
#include "support/second_report.h"

namespace fy = ferry;
using Xs = std::vector<fy::Tensor>;

namespace {

fy::Policy offload_names(std::vector<std::string> names) {
  return fy::policies::save_and_offload_only_these_names({}, std::move(names), fy::MemoryKind::device,
                                                         fy::MemoryKind::pinned_host);
}

nlohmann::json read_trace(const fy::Compiled& c, const std::vector<fy::Array>& args) {
  std::string path = ::testing::TempDir() + "ferry_offload_trace.json";
  c.run_traced(args, path);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::remove(path.c_str());
  return nlohmann::json::parse(ss.str());
}

TEST(Offload, SecondReportCompilesRunsAndStreamsEachStep) {
  std::vector<fy::Array> args = fy::testing::second_report_args();
  fy::Compiled c = fy::testing::second_report(true).compile();
  fy::MemoryStats m = c.memory_analysis();
  EXPECT_GT(m.host_temp_size_in_bytes, 0);
  auto g = fy::testing::run_checked(c, args);
  EXPECT_TRUE(g[0].equals(fy::testing::run_checked(fy::testing::second_report(false).compile(), args)[0]));
  // Each forward step streams its named value out; each backward step's slice was prefetched.
  fy::ExecutionStats s = c.execution_stats();
  EXPECT_EQ(s.bytes_to_host, 2 * 3 * 4);
  EXPECT_EQ(s.bytes_to_device, 2 * 3 * 4);
  int streamed = 0, prefetched = 0;
  nlohmann::json trace = read_trace(c, args);
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || e["tid"] != 1) continue;
    std::string name = e["name"];
    streamed += name == "scan: device -> host (streamed)";
    prefetched += name == "scan: host -> device (prefetch)";
  }
  EXPECT_EQ(streamed, 2);
  EXPECT_EQ(prefetched, 2);
}

// A scanned model: per layer x -> tanh(x @ w), x tagged "x" and offloaded, the rest recomputed.
fy::Compiled scanned_model(int layers, int batch, int width) {
  auto layer = fy::checkpoint(
      [](fy::Tensor x, fy::Tensor w) {
        x = fy::checkpoint_name(x, "x");
        return std::pair{fy::tanh(fy::matmul(x, w)), fy::Tensor{}};
      },
      offload_names({"x"}));
  auto step = fy::jit([layer](fy::Tensor x, fy::Tensor ws) {
    return fy::grad([&](fy::Tensor w) { return fy::sum(fy::scan(layer, x, w).carry); })(ws);
  });
  return step.lower(fy::ShapeDtype{{batch, width}}, fy::ShapeDtype{{layers, width, width}}).compile();
}

TEST(Offload, DevicePeakStaysFlatAsScannedLayersAreAdded) {
  const int batch = 8192, width = 16;
  fy::Compiled l8 = scanned_model(8, batch, width), l64 = scanned_model(64, batch, width);
  int64_t p8 = l8.memory_analysis().peak_memory_in_bytes, p64 = l64.memory_analysis().peak_memory_in_bytes;
  EXPECT_LE(static_cast<double>(p64), 1.05 * static_cast<double>(p8)) << l8.memory_report() << l64.memory_report();
  // The per-layer residuals went to the host instead: 56 more layers of [8192,16] f32 there.
  EXPECT_EQ(l64.memory_analysis().host_temp_size_in_bytes - l8.memory_analysis().host_temp_size_in_bytes,
            int64_t{56} * batch * width * 4);
  fy::testing::run_checked(l8, {fy::full({batch, width}, 0.1), fy::full({8, width, width}, 0.05)});
}

// The second report's step over `steps` steps of `width` floats, differentiated for the params
// alone (xs is read, never differentiated); `carry_offloaded` names the step's input too.
fy::Compiled second_report_steps(int steps, int width, bool carry_offloaded) {
  auto step = fy::checkpoint(
      [carry_offloaded](fy::Tensor y, fy::Tensor /*x_i*/) {
        if (carry_offloaded) y = fy::checkpoint_name(y, "carry");
        y = fy::checkpoint_name(fy::sin(y), "save_remat");
        return std::pair{fy::sin(y), fy::Tensor{}};
      },
      offload_names({"carry", "save_remat"}));
  auto apply = fy::jit([step](fy::Tensor params, fy::Tensor xs) {
    return fy::grad([&](fy::Tensor p) { return fy::sum(fy::scan(step, p, xs).carry); })(params);
  });
  return apply.lower(fy::ShapeDtype{{width}}, fy::ShapeDtype{{steps, width}}).compile();
}

// The backward scan stacks a cotangent for xs and nobody reads it: the compiler drops it, or
// the device would hold a whole stack that grows with the length. With every per-step residual
// offloaded the device is flat; with the carry saved (the report as written) the device grows by
// the carries alone, one slice per step, and the host by the offloaded slices.
TEST(Offload, SecondReportDeviceGrowsOnlyByWhatItSaves) {
  const int width = 1024;
  const int64_t slice = int64_t{width} * 4;
  for (bool carry_offloaded : {true, false}) {
    SCOPED_TRACE(carry_offloaded ? "carry offloaded" : "carry saved");
    fy::Compiled s8 = second_report_steps(8, width, carry_offloaded), s64 = second_report_steps(64, width, carry_offloaded);
    fy::MemoryStats m8 = s8.memory_analysis(), m64 = s64.memory_analysis();
    EXPECT_EQ(m64.temp_size_in_bytes - m8.temp_size_in_bytes, carry_offloaded ? 0 : 56 * slice)
        << s8.memory_report() << s64.memory_report();
    EXPECT_EQ(m64.host_temp_size_in_bytes - m8.host_temp_size_in_bytes, (carry_offloaded ? 2 : 1) * 56 * slice);
    fy::testing::run_checked(s8, {fy::full({width}, 0.3), fy::full({8, width}, 1.0)});
  }
}

TEST(Offload, CopiesOverlapComputeOnTheTimeline) {
  const int layers = 6, batch = 8192, width = 64;
  fy::Compiled c = scanned_model(layers, batch, width);
  std::vector<fy::Array> args{fy::full({batch, width}, 0.1), fy::full({layers, width, width}, 0.01)};
  auto events = read_trace(c, args)["traceEvents"];
  std::vector<std::pair<double, double>> compute, copies;
  for (const auto& e : events) {
    if (e["ph"] != "X" || e["name"] == "scan") continue;  // a scan's slice spans its whole loop
    double b = e["ts"], d = e["dur"];
    (e["tid"] == 0 ? compute : copies).emplace_back(b, b + d);
  }
  ASSERT_FALSE(copies.empty());
  int overlapping = 0;
  for (auto [cb, ce] : copies)
    for (auto [kb, ke] : compute)
      if (kb < ce && cb < ke) {
        ++overlapping;
        break;
      }
  EXPECT_GT(overlapping, 0) << "no copy overlapped a compute slice";
  bool counters = false;
  for (const auto& e : events) counters = counters || (e["ph"] == "C" && e["name"] == "pinned_host bytes");
  EXPECT_TRUE(counters);
}

TEST(Offload, AnySliceShapeAndNestedScans) {
  // Slices of a transposed value, 7x13 steps that tile nothing, offloaded per step; and a scan
  // nested in the checkpointed step with its own offloaded residuals.
  auto f = [](const Xs& p) {
    auto step = fy::checkpoint(
        [](fy::Tensor c, fy::Tensor x) {
          fy::Tensor t = fy::checkpoint_name(fy::transpose(fy::sin(x), {1, 0}), "t");  // [13, 7]
          fy::Tensor inner = fy::scan([](fy::Tensor a, fy::Tensor row) {
            fy::Tensor r = fy::checkpoint_name(fy::cos(row) * a, "t");
            return std::pair{fy::sum(r) * 0.1 + a, r};
          }, c, t).carry;
          return std::pair{inner, fy::sum(t)};
        },
        offload_names({"t"}));
    auto r = fy::scan(step, p[0], p[1]);
    return fy::sum(r.carry) + fy::sum(r.ys);
  };
  auto args = fy::testing::random_f64({{}, {5, 7, 13}}, 21);
  auto plain = [](const Xs& p) {
    auto r = fy::scan([](fy::Tensor c, fy::Tensor x) {
      fy::Tensor t = fy::transpose(fy::sin(x), {1, 0});
      fy::Tensor inner = fy::scan([](fy::Tensor a, fy::Tensor row) {
        fy::Tensor r = fy::cos(row) * a;
        return std::pair{fy::sum(r) * 0.1 + a, r};
      }, c, t).carry;
      return std::pair{inner, fy::sum(t)};
    }, p[0], p[1]);
    return fy::sum(r.carry) + fy::sum(r.ys);
  };
  auto got = fy::testing::ferry_gradients(f, args), want = fy::testing::ferry_gradients(plain, args);
  for (size_t i = 0; i < want.size(); ++i)
    for (size_t j = 0; j < want[i].size(); ++j) EXPECT_NEAR(got[i][j], want[i][j], 1e-12);
  auto c = fy::jit([&](std::vector<fy::Tensor> xs) { return fy::grad(f)(xs); }).lower(args).compile();
  EXPECT_GT(c.memory_analysis().host_temp_size_in_bytes, 0);
}

}  // namespace
