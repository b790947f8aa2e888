// The recorded run for the memory page (measured_timeline.h).
#include "driver/measured_timeline.h"

#include <algorithm>
#include <array>
#include <map>
#include <vector>

namespace ferry::driver {
namespace {

using nlohmann::json;

// Slices and samples are merged down to about this many per lane.
constexpr size_t kMaxMeasured = 1500;

// [begin, end, bytes] intervals as [begin, end, bytes, count]: neighbours closer than a gap are
// merged, the gap doubling until at most kMaxMeasured remain (a run of 100,000 kernels draws as
// busy stretches, not as 100,000 slivers).
json merge_intervals(std::vector<std::array<double, 3>> v, double span) {
  std::sort(v.begin(), v.end());
  json out = json::array();
  double gap = 0;
  for (int round = 0; round < 40; ++round) {
    out = json::array();
    std::array<double, 4> cur{};  // begin, end, value sum, count
    bool open = false;
    for (const auto& s : v) {
      if (open && s[0] - cur[1] <= gap) {
        cur[1] = std::max(cur[1], s[1]);
        cur[2] += s[2];
        cur[3] += 1;
        continue;
      }
      if (open) out.push_back(json::array({cur[0], cur[1], cur[2], cur[3]}));
      cur = {s[0], s[1], s[2], 1};
      open = true;
    }
    if (open) out.push_back(json::array({cur[0], cur[1], cur[2], cur[3]}));
    if (out.size() <= kMaxMeasured) break;
    gap = gap == 0 ? span / static_cast<double>(kMaxMeasured * 4) : gap * 2;
  }
  return out;
}

// The recorded run (a Chrome trace from runtime::Timeline) in milliseconds from its first event:
// compute slices, copies each way, and the live arena bytes of each memory kind over time.
}  // namespace

json measured_timeline(const std::string& trace) {
  if (trace.empty()) return nullptr;
  json t = json::parse(trace, nullptr, false);
  if (t.is_discarded() || !t.contains("traceEvents") || !t["traceEvents"].is_array()) return nullptr;
  std::vector<std::array<double, 3>> compute, to_host, to_device;
  std::map<std::string, std::vector<std::pair<double, double>>> live;
  double first = 1e300, last = -1e300;
  for (const json& e : t["traceEvents"]) {
    if (!e.is_object() || !e.contains("ph") || !e.contains("ts")) continue;
    const std::string ph = e.value("ph", "");
    const double ts = e.value("ts", 0.0) / 1e3;
    if (ph == "X") {
      const double end = ts + e.value("dur", 0.0) / 1e3;
      first = std::min(first, ts);
      last = std::max(last, end);
      if (e.value("tid", 0) == 0) {
        compute.push_back({ts, end, 0});
      } else {
        const std::string name = e.value("name", "");
        const double bytes = e.contains("args") ? e["args"].value("bytes", 0.0) : 0.0;
        // Copies are named "<from> -> <to>", or "scan: host -> device (prefetch)" by the scan runner.
        const size_t arrow = name.find("-> ");
        const bool to_dev = arrow != std::string::npos && name.compare(arrow + 3, 6, "device") == 0;
        (to_dev ? to_device : to_host).push_back({ts, end, bytes});
      }
    } else if (ph == "C") {
      first = std::min(first, ts);
      last = std::max(last, ts);
      std::string name = e.value("name", "");
      if (name.size() > 6 && name.compare(name.size() - 6, 6, " bytes") == 0) name.resize(name.size() - 6);
      live[name].emplace_back(ts, e.contains("args") ? e["args"].value("live", 0.0) : 0.0);
    }
  }
  if (first > last) return nullptr;
  auto shift = [&](std::vector<std::array<double, 3>>& v) {
    for (auto& s : v) s[0] -= first, s[1] -= first;
    return merge_intervals(v, last - first);
  };
  json out{{"ms", last - first}, {"compute", shift(compute)}, {"to_host", shift(to_host)},
           {"to_device", shift(to_device)}, {"live", json::object()}};
  for (auto& [kind, samples] : live) {
    // At most 2 * kMaxMeasured points: each bucket of time keeps its lowest and highest sample, so
    // the line still reaches every high-water mark.
    std::stable_sort(samples.begin(), samples.end(), [](auto& a, auto& b) { return a.first < b.first; });
    const double width = std::max(last - first, 1e-9) / static_cast<double>(kMaxMeasured);
    json points = json::array();
    for (size_t i = 0; i < samples.size();) {
      const auto bucket = static_cast<int64_t>((samples[i].first - first) / width);
      size_t lo = i, hi = i, j = i;
      for (; j < samples.size() && static_cast<int64_t>((samples[j].first - first) / width) == bucket; ++j) {
        if (samples[j].second < samples[lo].second) lo = j;
        if (samples[j].second > samples[hi].second) hi = j;
      }
      for (size_t k : {std::min(lo, hi), std::max(lo, hi)}) {
        points.push_back(json::array({samples[k].first - first, samples[k].second}));
        if (lo == hi) break;
      }
      // The last sample of a bucket is where the next one starts from.
      if (j - 1 != lo && j - 1 != hi) points.push_back(json::array({samples[j - 1].first - first, samples[j - 1].second}));
      i = j;
    }
    out["live"][kind] = points;
  }
  return out;
}

}  // namespace ferry::driver
