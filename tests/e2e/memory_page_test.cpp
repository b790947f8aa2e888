// The memory page's data and entry points, without a browser (memory_page_browser_test.cpp opens
// the pages in Chromium): what the page draws adds up to the plan's peaks, buffers are coloured by
// what the policy made of them, copies and recorded runs are there, big plans stay small, and user
// text cannot break the page.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "ferry/ferry.h"
#include "support/error_of.h"
#include "support/first_report.h"
#include "support/second_report.h"

namespace fy = ferry;
using nlohmann::json;
using ::testing::HasSubstr;

namespace {

// The data a page embeds for its script.
json page_data(const std::string& html) {
  const std::string open = R"(<script id="ferry-data" type="application/json">)";
  const size_t a = html.find(open);
  EXPECT_NE(a, std::string::npos);
  const size_t b = html.find("</script>", a);
  return json::parse(html.substr(a + open.size(), b - a - open.size()));
}

// The most bytes the page's stack reaches in each lane (device, host): every buffer over its live
// range, each aggregate of small buffers by its changes, and the arena's slack throughout. Computed
// here from the data, as the page's script computes it from the same data.
std::array<int64_t, 2> stack_peaks(const json& plan) {
  const int n = plan["n"];
  std::array<std::vector<int64_t>, 2> delta;
  for (auto& d : delta) d.assign(static_cast<size_t>(n) + 2, 0);
  for (const json& b : plan["buffers"]) {
    delta[b["m"].get<size_t>()][b["a"].get<size_t>()] += b["s"].get<int64_t>();
    delta[b["m"].get<size_t>()][b["b"].get<size_t>() + 1] -= b["s"].get<int64_t>();
  }
  for (const json& g : plan["groups"])
    for (size_t i = 0; i + 2 < g["d"].size(); i += 3) delta[g["m"].get<size_t>()][g["d"][i].get<size_t>()] += g["d"][i + 1].get<int64_t>();
  std::array<int64_t, 2> peak{};
  for (size_t m = 0; m < 2; ++m) {
    int64_t live = plan["slack"][m].get<int64_t>();
    for (int t = 0; t <= n; ++t) peak[m] = std::max(peak[m], live += delta[m][static_cast<size_t>(t)]);
  }
  return peak;
}

// Bytes per category name in a lane, over every buffer drawn one by one.
std::map<int, int64_t> bytes_by_category(const json& plan, int lane) {
  std::map<int, int64_t> out;
  for (const json& b : plan["buffers"])
    if (b["m"] == lane)
      for (const json& ph : b["p"]) out[ph[1].get<int>()] += b["s"].get<int64_t>();
  return out;
}

constexpr int kSaved = 2, kOffloaded = 3, kTransfer = 8;  // memory_page.cpp's categories

void expect_adds_up(const fy::Compiled& c) {
  const json plan = page_data(c.memory_html())["plans"][0];
  const fy::MemoryStats m = c.memory_analysis();
  const auto peaks = stack_peaks(plan);
  EXPECT_EQ(peaks[0], m.peak_memory_in_bytes) << c.memory_report();
  EXPECT_EQ(peaks[1], m.host_peak_memory_in_bytes) << c.memory_report();
  EXPECT_EQ(plan["stats"]["peak_memory_in_bytes"], m.peak_memory_in_bytes);
  EXPECT_GE(plan["slack"][0].get<int64_t>(), 0);
  EXPECT_GE(plan["slack"][1].get<int64_t>(), 0);
}

TEST(MemoryPage, TheStackAddsUpToThePlansPeaks) {
  using namespace fy::policies;
  expect_adds_up(fy::testing::first_report(dots_with_no_batch_dims_saveable));
  expect_adds_up(fy::testing::first_report(fy::Policy(fy::testing::dot_with_no_batch_dims_offload)));
  expect_adds_up(fy::testing::second_report(true).compile());
  expect_adds_up(fy::testing::second_report(false).compile());
  // Outputs written into donated arguments are drawn once, as the arguments.
  auto donated = fy::jit([](fy::Tensor w, fy::Tensor g) { return w - 0.1 * fy::tanh(g) * w; }, {.donate_argnums = {0}});
  fy::Compiled d = donated.lower(fy::ShapeDtype{{128, 64}}, fy::ShapeDtype{{128, 64}}).compile();
  ASSERT_GT(d.memory_analysis().alias_size_in_bytes, 0);
  expect_adds_up(d);
}

TEST(MemoryPage, BuffersAreColouredByWhatThePolicyMadeOfThem) {
  using namespace fy::policies;
  const json saved = page_data(fy::testing::first_report(dots_with_no_batch_dims_saveable).memory_html())["plans"][0];
  fy::Compiled offloading = fy::testing::first_report(fy::Policy(fy::testing::dot_with_no_batch_dims_offload));
  const json offloaded = page_data(offloading.memory_html())["plans"][0];
  EXPECT_GT(bytes_by_category(saved, 0)[kSaved], 0);
  EXPECT_TRUE(bytes_by_category(saved, 1).empty());
  EXPECT_EQ(bytes_by_category(saved, 0)[kOffloaded], 0);
  // Every host buffer of the offloading plan is an offloaded residual, or one on its way there.
  const auto host = bytes_by_category(offloaded, 1);
  EXPECT_GT(host.at(kOffloaded), 0);
  for (const auto& [category, bytes] : host) EXPECT_TRUE(category == kOffloaded || category == kTransfer) << category;
  // The copies lane holds one copy to the host per layer and one back, as the run counts them.
  int to_host = 0, to_device = 0;
  int64_t bytes_to_host = 0;
  for (const json& c : offloaded["copies"]) {
    (c[3] == 0 ? to_host : to_device) += c[5].get<int>();
    if (c[3] == 0) bytes_to_host += c[2].get<int64_t>();
    EXPECT_LE(c[0].get<int>(), c[1].get<int>());
  }
  EXPECT_EQ(to_host, 8);
  EXPECT_EQ(to_device, 8);
  offloading.run(fy::testing::first_report_args());
  EXPECT_EQ(bytes_to_host, offloading.execution_stats().bytes_to_host);
}

TEST(MemoryPage, CopiesInsideAScanAreDrawnAtTheScan) {
  fy::Compiled c = fy::testing::second_report(true).compile();
  const json plan = page_data(c.memory_html())["plans"][0];
  int64_t to_host = 0, to_device = 0;
  for (const json& copy : plan["copies"]) (copy[3] == 0 ? to_host : to_device) += copy[2].get<int64_t>();
  c.run(fy::testing::second_report_args());
  EXPECT_EQ(to_host, c.execution_stats().bytes_to_host);
  EXPECT_EQ(to_device, c.execution_stats().bytes_to_device);
  EXPECT_GT(to_host, 0);
}

TEST(MemoryPage, ARecordedRunIsDrawnBesideThePlan) {
  fy::Compiled c = fy::testing::first_report(fy::Policy(fy::testing::dot_with_no_batch_dims_offload));
  EXPECT_TRUE(page_data(c.memory_html())["plans"][0]["measured"].is_null());
  const std::string trace = ::testing::TempDir() + "memory_page_trace.json";
  c.run_traced(fy::testing::first_report_args(), trace);
  const json measured = page_data(c.memory_html())["plans"][0]["measured"];
  ASSERT_TRUE(measured.is_object());
  EXPECT_GT(measured["ms"].get<double>(), 0);
  EXPECT_FALSE(measured["compute"].empty());
  EXPECT_FALSE(measured["to_host"].empty());
  EXPECT_FALSE(measured["to_device"].empty());
  // The measured arena bytes reach the plan's most live bytes (invariant 1, seen on the page).
  int64_t most = 0;
  for (const json& s : measured["live"]["device"]) most = std::max(most, s[1].get<int64_t>());
  EXPECT_EQ(most, page_data(c.memory_html())["plans"][0]["plan_peak"][0]["live"].get<int64_t>());
  std::filesystem::remove(trace);
}

// Issue 31: a 1,000-layer plan's page stays under 5 MB; small buffers are drawn together.
TEST(MemoryPage, AThousandLayerPlanStaysSmall) {
  fy::Compiled c = fy::testing::first_report(fy::Policy(fy::testing::dot_with_no_batch_dims_offload), 0, 1000);
  const std::string html = c.memory_html();
  EXPECT_LT(html.size(), size_t{5} << 20);
  const json plan = page_data(html)["plans"][0];
  EXPECT_LE(plan["buffers"].size(), 3000u);
  EXPECT_FALSE(plan["groups"].empty());
  const auto peaks = stack_peaks(plan);
  EXPECT_EQ(peaks[0], c.memory_analysis().peak_memory_in_bytes);
  EXPECT_EQ(peaks[1], c.memory_analysis().host_peak_memory_in_bytes);
}

TEST(MemoryPage, UserTextCannotBreakThePage) {
  // A source name that would close the data's script element, with bytes that are not UTF-8.
  const std::string name = "</script><script>window.pwned=1</script>\xff\xfe";
  auto f = fy::jit([&](fy::Tensor x) { return fy::sum(fy::checkpoint_name(fy::exp(x), name) * x); });
  const std::string html = f.lower(fy::ShapeDtype{{256, 64}}).compile().memory_html();
  EXPECT_EQ(html.find("<script>window.pwned"), std::string::npos);
  const json plan = page_data(html)["plans"][0];
  EXPECT_GT(stack_peaks(plan)[0], 0);
}

TEST(MemoryPage, BadRequestsAreInvalidArgument) {
  fy::Compiled c = fy::testing::second_report(true).compile();
  const std::string missing = ::testing::TempDir() + "no-such-folder/page.html";
  EXPECT_EQ(fy::testing::error_of([&] { c.save_memory_html(missing); }).code(), fy::ErrorCode::invalid_argument);
  EXPECT_EQ(fy::testing::error_of([&] { c.save_memory_html(::testing::TempDir()); }).code(), fy::ErrorCode::invalid_argument);
  EXPECT_EQ(fy::testing::error_of([&] { c.save_memory_html(""); }).code(), fy::ErrorCode::invalid_argument);
  EXPECT_EQ(fy::testing::error_of([&] { fy::check_memory_html_path(missing); }).code(), fy::ErrorCode::invalid_argument);
  EXPECT_EQ(fy::testing::error_of([&] { fy::memory_html({}); }).code(), fy::ErrorCode::invalid_argument);
  EXPECT_EQ(fy::testing::error_of([&] { fy::memory_html({{.title = "nothing"}}); }).code(), fy::ErrorCode::invalid_argument);
  EXPECT_EQ(fy::testing::error_of([&] { fy::memory_html({{"c", c}}, {.device_memory_limit = -1}); }).code(),
            fy::ErrorCode::invalid_argument);
  const std::string path = ::testing::TempDir() + "memory_page_saved.html";
  c.save_memory_html(path);
  EXPECT_TRUE(std::filesystem::file_size(path) > 0);
  std::filesystem::remove(path);
}

TEST(MemoryPage, SeveralPlansShareOnePage) {
  using namespace fy::policies;
  fy::Compiled saved = fy::testing::first_report(dots_with_no_batch_dims_saveable);
  fy::Compiled offloaded = fy::testing::first_report(fy::Policy(fy::testing::dot_with_no_batch_dims_offload));
  const json data = page_data(fy::memory_html({{"saved", saved}, {"offloaded", offloaded}, {.title = "too big", .refused = "RESOURCE_EXHAUSTED: ..."}},
                                              {.device_memory_limit = fy::testing::kFirstReportLimit}));
  ASSERT_EQ(data["plans"].size(), 3u);
  EXPECT_EQ(data["limit"], fy::testing::kFirstReportLimit);
  EXPECT_EQ(stack_peaks(data["plans"][0])[0], saved.memory_analysis().peak_memory_in_bytes);
  EXPECT_EQ(stack_peaks(data["plans"][1])[0], offloaded.memory_analysis().peak_memory_in_bytes);
  EXPECT_EQ(data["plans"][2]["refused"], "RESOURCE_EXHAUSTED: ...");
}

}  // namespace
