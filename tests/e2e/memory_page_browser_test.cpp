// The memory pages of the two reports' programs, opened in headless Chromium (issue 31): the page's
// script runs without an error, the peak it drew (data-peak-bytes) is the plan's, the buffers it
// lists at the peak are the plan's, in the words memory_report uses, and a screenshot of each page
// is kept under the build folder (test_artifacts/memory_pages/). Skipped, saying so, where no
// Chromium is installed (Debian: apt-get install chromium; tools/bootstrap.sh installs it).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "compiler/memory_analysis.h"
#include "driver/lowered.h"
#include "ferry/ferry.h"
#include "support/first_report.h"
#include "support/second_report.h"

namespace fy = ferry;
namespace fs = std::filesystem;

namespace {

// FERRY_CHROMIUM, else the first Chromium on the PATH.
std::optional<std::string> find_chromium() {
  if (const char* given = std::getenv("FERRY_CHROMIUM"); given && *given) return std::string(given);
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (const char* name : {"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}) {
    size_t start = 0;
    while (start <= dirs.size()) {
      const size_t end = std::min(dirs.find(':', start), dirs.size());
      const fs::path candidate = fs::path(dirs.substr(start, end - start)) / name;
      std::error_code ec;
      if (!candidate.parent_path().empty() && fs::is_regular_file(candidate, ec)) return candidate.string();
      start = end + 1;
    }
  }
  return std::nullopt;
}

fs::path artifacts() {
  fs::path dir = fs::path(FERRY_TEST_ARTIFACTS) / "memory_pages";
  fs::create_directories(dir);
  return dir;
}

// One page to open: written to <artifacts>/<name>.html, its screenshot to <name>.png.
struct Page {
  std::string name;
  std::string html;
  int width = 1300, height = 1000;
  std::string fragment = "";  // after '#' in the URL
};

// Opens the pages at once (one Chromium each, so that they load side by side) and returns the DOM
// each has once its load event has run: --dump-dom prints it, and --screenshot saves the picture.
std::vector<std::string> open_in_chromium(const std::string& chromium, const std::vector<Page>& pages) {
  std::vector<FILE*> running;
  for (const Page& p : pages) {
    const fs::path html = artifacts() / (p.name + ".html"), png = artifacts() / (p.name + ".png");
    std::ofstream(html, std::ios::binary) << p.html;
    fs::remove(png);
    const fs::path profile = artifacts() / ("profile-" + p.name);  // one per browser: they run at once
    // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
    const std::string command = "timeout 120 '" + chromium + "' --headless --no-sandbox --disable-gpu --disable-dev-shm-usage "
                                "--no-first-run --hide-scrollbars --user-data-dir='" + profile.string() + "' --window-size=" +
                                std::to_string(p.width) + "," + std::to_string(p.height) + " --screenshot='" + png.string() +
                                "' --dump-dom 'file://" + fs::absolute(html).string() + (p.fragment.empty() ? "" : "#" + p.fragment) + "' 2>/dev/null";
    running.push_back(popen(command.c_str(), "r"));
  }
  std::vector<std::string> doms;
  for (FILE* f : running) {
    std::string dom;
    if (f) {
      std::array<char, 1 << 16> buffer;
      size_t n;
      while ((n = fread(buffer.data(), 1, buffer.size(), f)) > 0) dom.append(buffer.data(), n);
      pclose(f);
    }
    doms.push_back(std::move(dom));
  }
  for (const Page& p : pages) fs::remove_all(artifacts() / ("profile-" + p.name));
  return doms;
}

std::string unescape(std::string s) {
  const std::pair<const char*, const char*> entities[] = {{"&quot;", "\""}, {"&lt;", "<"}, {"&gt;", ">"}, {"&#39;", "'"},
                                                          {"&nbsp;", "\xc2\xa0"}, {"&amp;", "&"}};
  for (const auto& [from, to] : entities)
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + std::strlen(to)))
      s.replace(at, std::strlen(from), to);
  return s;
}

using Attributes = std::map<std::string, std::string>;

Attributes attributes(const std::string& tag) {
  static const std::regex attribute(R"re(([a-z][a-z0-9-]*)="([^"]*)")re");
  Attributes out;
  for (std::sregex_iterator it(tag.begin(), tag.end(), attribute), end; it != end; ++it) out[(*it)[1]] = unescape((*it)[2]);
  return out;
}

// The opening tags of every element `tag` (with its attributes) whose class is `cls`, and what
// follows each up to its closing tag.
std::vector<std::pair<Attributes, std::string>> elements(const std::string& dom, const std::string& tag, const std::string& cls) {
  std::vector<std::pair<Attributes, std::string>> out;
  const std::string open = "<" + tag + " class=\"" + cls + "\"";
  for (size_t at = dom.find(open); at != std::string::npos; at = dom.find(open, at + 1)) {
    const size_t close = dom.find('>', at);
    const size_t end = dom.find("</" + tag + ">", close);
    out.emplace_back(attributes(dom.substr(at, close - at)), dom.substr(close + 1, end - close - 1));
  }
  return out;
}

struct Row {
  Attributes attrs;
  std::vector<std::string> cells;
};

// The text between each "<open ...>" and the next "</close>" from `from`, with the open tag's
// attributes (std::regex would recurse once per character of a long match).
std::vector<std::pair<std::string, std::string>> tags(const std::string& text, const std::string& open, const std::string& close) {
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t at = text.find(open); at != std::string::npos; at = text.find(open, at + 1)) {
    const size_t gt = text.find('>', at);
    const size_t end = text.find(close, gt);
    if (gt == std::string::npos || end == std::string::npos) break;
    out.emplace_back(text.substr(at, gt - at), text.substr(gt + 1, end - gt - 1));
  }
  return out;
}

std::vector<Row> rows(const std::string& table) {
  std::vector<Row> out;
  for (const auto& [tr, inside] : tags(table, "<tr ", "</tr>")) {
    Row r{attributes(tr), {}};
    if (!r.attrs.count("data-bytes")) continue;
    for (const auto& td : tags(inside, "<td", "</td>")) r.cells.push_back(unescape(td.second));
    out.push_back(std::move(r));
  }
  return out;
}

const fy::compiler::MemoryPlan& plan_of(const fy::Compiled& c) { return *c.impl().plan; }
const fy::ir::Program& program_of(const fy::Compiled& c) { return *c.impl().program; }

// The arena buffers the plan has live at position t of `lane` (0: device, 1: host kinds together).
std::set<int> plan_live(const fy::compiler::MemoryPlan& plan, int lane, int t) {
  std::set<int> out;
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const auto& b = plan.buffers[i];
    if ((b.kind == fy::MemoryKind::device) == (lane == 0) && b.output_of < 0 && b.size > 0 && b.start <= t && t <= b.end)
      out.insert(static_cast<int>(i));
  }
  return out;
}

int64_t bytes_of(const Row& r) { return std::stoll(r.attrs.at("data-bytes")); }

// The table of the buffers live at one peak holds exactly what the plan holds there: the arena
// buffers (by index, size and the report's description), the arguments and outputs, and the
// arena's slack, adding up to the peak; small buffers may be drawn together, if they are small.
void expect_table_is_the_plans(const fy::Compiled& c, const Attributes& table, const std::string& body, int lane, int64_t peak) {
  const auto& plan = plan_of(c);
  const auto& program = program_of(c);
  const int t = std::stoi(table.at("data-peak-position"));
  if (lane == 0) EXPECT_EQ(t, plan.peak_position[fy::compiler::kind_index(fy::MemoryKind::device)]);
  const std::set<int> live = plan_live(plan, lane, t);
  const std::vector<int> producers = fy::compiler::producers(program);
  std::set<int> listed;
  int64_t total = 0, aggregated = 0, unlisted = 0;
  for (const Row& r : rows(body)) {
    total += bytes_of(r);
    const std::string role = r.attrs.count("data-role") ? r.attrs.at("data-role") : "";
    if (role == "aggregate" || role == "rest") {
      aggregated += bytes_of(r);
      continue;
    }
    if (role == "slack" || role.rfind("argument ", 0) == 0 || role.rfind("output ", 0) == 0) {
      unlisted += bytes_of(r);
      continue;
    }
    const int index = std::stoi(r.attrs.at("data-buffer"));
    ASSERT_TRUE(live.count(index)) << "buffer " << index << " is listed at the peak but the plan has it dead at " << t;
    listed.insert(index);
    const auto& b = plan.buffers[static_cast<size_t>(index)];
    EXPECT_EQ(bytes_of(r), b.size) << "buffer " << index;
    ASSERT_GE(r.cells.size(), 2u);
    EXPECT_EQ(r.cells[1], fy::compiler::describe(program, b, producers, t)) << "buffer " << index;
  }
  int64_t missing = 0;
  for (int i : live)
    if (!listed.count(i)) {
      missing += plan.buffers[static_cast<size_t>(i)].size;
      EXPECT_LT(plan.buffers[static_cast<size_t>(i)].size * 1000, peak) << "buffer " << i << " is not listed at the peak";
    }
  EXPECT_EQ(total, peak) << "the rows do not add up to the peak";
  EXPECT_LE(missing, aggregated) << "the arena buffers not listed are not in the aggregates either";
  if (lane == 0) {
    // At the device peak the arena holds its most live bytes: the plan's figure, listed.
    int64_t arena = 0;
    for (int i : live) arena += plan.buffers[static_cast<size_t>(i)].size;
    EXPECT_EQ(arena, plan.peak_live[fy::compiler::kind_index(fy::MemoryKind::device)]);
  }
  (void)unlisted;
}

// Everything the browser shows of one page: no script error, and each plan's section as the plan.
void expect_page_is_the_plans(const std::string& dom, const std::vector<fy::Compiled>& plans, const fs::path& screenshot) {
  const size_t at = dom.find("<body");
  ASSERT_NE(at, std::string::npos) << "Chromium printed no page:\n" << dom.substr(0, 2000);
  const Attributes body = attributes(dom.substr(at, dom.find('>', at) - at));
  EXPECT_EQ(body.count("data-errors"), 0u) << body.at("data-errors");
  ASSERT_EQ(body.count("data-status"), 1u);
  EXPECT_EQ(body.at("data-status"), "ok") << "the page's script did not finish";
  EXPECT_EQ(std::stoll(body.at("data-peak-bytes")), plans[0].memory_analysis().peak_memory_in_bytes);
  const auto sections = elements(dom, "section", "plan");
  ASSERT_EQ(sections.size(), plans.size());
  for (size_t i = 0; i < plans.size(); ++i) {
    SCOPED_TRACE("plan " + std::to_string(i) + ": " + sections[i].first.at("data-title"));
    const fy::MemoryStats stats = plans[i].memory_analysis();
    const Attributes& s = sections[i].first;
    EXPECT_EQ(std::stoll(s.at("data-peak-bytes")), stats.peak_memory_in_bytes);
    EXPECT_EQ(std::stoll(s.at("data-host-peak-bytes")), stats.host_peak_memory_in_bytes);
    const auto tables = elements(sections[i].second, "table", "peak-list");
    ASSERT_EQ(tables.size(), stats.host_peak_memory_in_bytes > 0 ? 2u : 1u);
    EXPECT_EQ(tables[0].first.at("data-lane"), "device");
    expect_table_is_the_plans(plans[i], tables[0].first, tables[0].second, 0, stats.peak_memory_in_bytes);
    if (tables.size() > 1) {
      EXPECT_EQ(tables[1].first.at("data-lane"), "host");
      expect_table_is_the_plans(plans[i], tables[1].first, tables[1].second, 1, stats.host_peak_memory_in_bytes);
    }
  }
  // The screenshot: a PNG with the charts in it (an empty page of this size is a few KB).
  std::ifstream png(screenshot, std::ios::binary);
  char magic[8] = {};
  png.read(magic, 8);
  EXPECT_EQ(std::string(magic, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << screenshot;
  EXPECT_GT(fs::exists(screenshot) ? fs::file_size(screenshot) : 0, 20000u) << screenshot;
}

class MemoryPageInChromium : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = find_chromium();
    if (!chromium_)
      GTEST_SKIP() << "no Chromium installed (Debian: apt-get install chromium, which tools/bootstrap.sh does; or set "
                      "FERRY_CHROMIUM): the memory pages are not opened in a browser";
  }
  std::optional<std::string> chromium_;
};

// The first report: the saving plan against the offloading one, on one page under the report's
// limit (the README's picture), and the offloading plan alone with a recorded run beside it.
TEST_F(MemoryPageInChromium, FirstReport) {
  using namespace fy::policies;
  fy::Compiled saved = fy::testing::first_report(dots_with_no_batch_dims_saveable);
  fy::Compiled offloaded = fy::testing::first_report(fy::Policy(fy::testing::dot_with_no_batch_dims_offload), fy::testing::kFirstReportLimit);
  // The comparison as the plans stand (the README's picture, docs/memory_page.png), then the
  // offloading plan once more with a run recorded beside it.
  const std::string compared =
      fy::memory_html({{"saved: dots_with_no_batch_dims_saveable", saved}, {"offloaded: dot_with_no_batch_dims_offload", offloaded}},
                      {.title = "The first report: saving the dot outputs against offloading them",
                       .device_memory_limit = fy::testing::kFirstReportLimit});
  offloaded.run_traced(fy::testing::first_report_args(), (artifacts() / "first_report_offloaded.trace.json").string());
  const std::vector<Page> pages{{"first_report_saved_vs_offloaded", compared, 1400, 780},
                                {"first_report_offloaded", offloaded.memory_html(), 1300, 1400}};
  const std::vector<std::string> doms = open_in_chromium(*chromium_, pages);
  {
    SCOPED_TRACE(pages[0].name);
    expect_page_is_the_plans(doms[0], {saved, offloaded}, artifacts() / (pages[0].name + ".png"));
  }
  {
    SCOPED_TRACE(pages[1].name);
    expect_page_is_the_plans(doms[1], {offloaded}, artifacts() / (pages[1].name + ".png"));
    EXPECT_NE(doms[1].find("Measured: the last recorded run"), std::string::npos);
  }
}

// The equations the detail of a selected buffer lists as making and reading it: the producers and
// readers of the values the plan put in that buffer.
void expect_detail_is_the_buffers(const std::string& dom, const fy::Compiled& c, int index) {
  const auto& program = program_of(c);
  const auto& b = plan_of(c).buffers[static_cast<size_t>(index)];
  const std::vector<int> producers = fy::compiler::producers(program);
  std::set<std::string> made, read;
  for (fy::ir::ValueId v : b.values) {
    made.insert(std::to_string(producers[static_cast<size_t>(v)]));
    for (size_t e = 0; e < program.equations.size(); ++e)
      for (fy::ir::ValueId in : program.equations[e].inputs)
        if (in == v) read.insert(std::to_string(e));
  }
  const size_t at = dom.find("<aside id=\"detail\"");
  ASSERT_NE(at, std::string::npos);
  const std::string aside = dom.substr(at, dom.find("</aside>", at) - at);
  const Attributes attrs = attributes(aside.substr(0, aside.find('>')));
  EXPECT_EQ(attrs.count("hidden"), 0u) << "nothing is selected";
  EXPECT_EQ(attrs.count("data-buffer") ? attrs.at("data-buffer") : "", std::to_string(index));
  auto listed = [&](const std::string& name) {
    std::set<std::string> out;
    for (const auto& [ul, items] : tags(aside, "<ul class=\"mono\" data-list=\"" + name + "\"", "</ul>"))
      for (const auto& li : tags(items, "<li data-equation", "</li>")) out.insert(attributes(li.first).at("data-equation"));
    return out;
  };
  EXPECT_EQ(listed("made-by"), made);
  EXPECT_EQ(listed("read-by"), read);
}

// The second report: per-step offload inside a differentiated scan; and a link to its offloaded
// residual (the host buffer) opens with that buffer selected, as a click would.
TEST_F(MemoryPageInChromium, SecondReport) {
  fy::Compiled c = fy::testing::second_report(true).compile();
  int host_buffer = -1;
  for (size_t i = 0; i < plan_of(c).buffers.size(); ++i)
    if (plan_of(c).buffers[i].kind != fy::MemoryKind::device && !plan_of(c).buffers[i].values.empty())
      host_buffer = static_cast<int>(i);
  ASSERT_GE(host_buffer, 0);
  const std::string html = c.memory_html();
  const std::vector<Page> pages{{"second_report", html, 1300, 1100},
                                {"second_report_selected", html, 1300, 1100, "buffer=" + std::to_string(host_buffer)}};
  const std::vector<std::string> doms = open_in_chromium(*chromium_, pages);
  expect_page_is_the_plans(doms[0], {c}, artifacts() / (pages[0].name + ".png"));
  expect_detail_is_the_buffers(doms[1], c, host_buffer);
}

// Issue 31: a 1,000-layer plan's page opens in under 2 s. data-ready-ms is the time from the start
// of navigation until the page's script has drawn everything (the browser's own start is not in it).
TEST_F(MemoryPageInChromium, AThousandLayerPlanOpensInUnderTwoSeconds) {
  fy::Compiled c = fy::testing::first_report(fy::Policy(fy::testing::dot_with_no_batch_dims_offload), 0, 1000);
  const std::vector<Page> pages{{"first_report_1000_layers", c.memory_html(), 1300, 1000}};
  const std::string dom = open_in_chromium(*chromium_, pages)[0];
  const size_t at = dom.find("<body");
  ASSERT_NE(at, std::string::npos) << "Chromium printed no page";
  const Attributes body = attributes(dom.substr(at, dom.find('>', at) - at));
  ASSERT_EQ(body.count("data-status") ? body.at("data-status") : "", "ok");
  EXPECT_EQ(std::stoll(body.at("data-peak-bytes")), c.memory_analysis().peak_memory_in_bytes);
  EXPECT_EQ(std::stoll(body.at("data-host-peak-bytes")), c.memory_analysis().host_peak_memory_in_bytes);
  EXPECT_LT(std::stoll(body.at("data-ready-ms")), 2000);
  std::printf("the 1,000-layer page: %zu bytes, drawn %s ms after navigation began\n", pages[0].html.size(),
              body.at("data-ready-ms").c_str());
}

}  // namespace
