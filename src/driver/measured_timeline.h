// A recorded run as the memory page draws it beside the plan: the Chrome trace that
// runtime::Timeline writes (Compiled::run_traced) reduced to what a page can hold for any run
// length: compute slices, copies each way, and the live arena bytes of each memory kind.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace ferry::driver {

// {"ms": the run's length, "compute" / "to_host" / "to_device": [[begin ms, end ms, bytes, how many
// slices merged], ...], "live": {kind: [[ms, bytes], ...]}}, times from the trace's first event;
// at most about 1,500 slices per lane and 3,000 samples per kind. null for an empty or
// unreadable trace.
nlohmann::json measured_timeline(const std::string& trace_json);

}  // namespace ferry::driver
