#include "runtime/timeline.h"

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "runtime/copy_queue.h"
#include "runtime/process_group.h"

namespace ferry::runtime {

Timeline::Timeline() : origin_(now_seconds()) {}

void Timeline::compute(std::string name, double begin, double end) {
  std::lock_guard<std::mutex> lock(mu_);
  slices_.push_back({std::move(name), 0, begin, end, 0});
}

void Timeline::copy(std::string name, int64_t bytes, double begin, double end) {
  std::lock_guard<std::mutex> lock(mu_);
  slices_.push_back({std::move(name), 1, begin, end, bytes});
}

void Timeline::collective(std::string name, int64_t bytes, double begin, double end) {
  std::lock_guard<std::mutex> lock(mu_);
  slices_.push_back({std::move(name), 2, begin, end, bytes});
}

void Timeline::live_bytes(MemoryKind kind, int64_t bytes, double at) {
  std::lock_guard<std::mutex> lock(mu_);
  samples_.push_back({kind, bytes, at});
}

std::string Timeline::to_json() const {
  std::lock_guard<std::mutex> lock(mu_);
  auto us = [&](double t) { return (t - origin_) * 1e6; };
  nlohmann::json events = nlohmann::json::array();
  // One track (pid) per process, so that the traces of a launch's processes open side by side.
  const int pid = processes::index() + 1;
  const std::string process = processes::joined()
                                  ? fmt::format("ferry process {} of {}", processes::index(), processes::count())
                                  : std::string("ferry");
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", process}}}});
  events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", "compute"}}}});
  events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 1}, {"args", {{"name", "copies"}}}});
  events.push_back(
      {{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 2}, {"args", {{"name", "collectives"}}}});
  for (const Slice& s : slices_) {
    nlohmann::json e = {{"name", s.name}, {"ph", "X"},          {"pid", pid},
                        {"tid", s.lane},  {"ts", us(s.begin)}, {"dur", us(s.end) - us(s.begin)}};
    if (s.lane != 0) e["args"] = {{"bytes", s.bytes}};
    events.push_back(std::move(e));
  }
  for (const Sample& s : samples_)
    events.push_back({{"name", std::string(memory_kind_name(s.kind)) + " bytes"},
                      {"ph", "C"},
                      {"pid", pid},
                      {"ts", us(s.at)},
                      {"args", {{"live", s.bytes}}}});
  return nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump();
}

}  // namespace ferry::runtime
