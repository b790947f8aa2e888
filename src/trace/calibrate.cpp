// Calibration: small programs compiled and run with ferry's own kernels, timed, and divided into
// the work the cost model counts for them, so that the rates mean what the cost model means.
#include "ferry/calibrate.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ferry/error.h"
#include "ferry/tensor.h"
#include "prims/registry.h"
#include "trace/lowered.h"

namespace ferry {
namespace {

// Sizes: the dot is large enough for BLAS to reach its steady rate (268 MFLOP); the elementwise and
// copy arrays (16 MiB each) are larger than a server's last-level cache, so they measure memory,
// not cache. Each program runs in a few to a few tens of milliseconds.
constexpr int64_t kDotSize = 512;
constexpr int64_t kStreamElements = int64_t{1} << 22;
constexpr int kElementwiseChain = 4;

// The median wall time of `repeats` runs after one warm-up (which also sizes the run's bookkeeping).
double median_seconds(const Compiled& c, const std::vector<Array>& args, int repeats) {
  c.run(args);
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    c.run(args);
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

prims::Cost traced_cost(const Lowered& lowered) { return prims::program_cost(*lowered.impl().program); }

double dot_flops_per_s(const CompileOptions& options, int repeats) {
  ShapeDtype square{{kDotSize, kDotSize}};
  Lowered lowered = jit([](Tensor a, Tensor b) { return matmul(a, b); }, "calibrate_dot").lower(square, square);
  Compiled c = lowered.compile(options);
  double seconds = median_seconds(c, {ones(square.shape), ones(square.shape)}, repeats);
  return traced_cost(lowered).flops / seconds;
}

// A chain of elementwise ops that runs in place in the arena, then a sum (so the output is small
// and the run's only large allocation is its arena).
double elementwise_bytes_per_s(const CompileOptions& options, int repeats) {
  ShapeDtype vec{{kStreamElements}};
  auto chain = [](Tensor x, Tensor y) {
    Tensor t = x;
    for (int i = 0; i < kElementwiseChain; ++i) t = i % 2 == 0 ? t + y : t * y;
    return sum(t);
  };
  Lowered lowered = jit(chain, "calibrate_elementwise").lower(vec, vec);
  Compiled c = lowered.compile(options);
  double seconds = median_seconds(c, {ones(vec.shape), ones(vec.shape)}, repeats);
  prims::Cost cost = traced_cost(lowered);
  return static_cast<double>(cost.bytes_read + cost.bytes_written) / seconds;
}

// The link: a round trip device -> pinned_host -> device before a sum, against the sum alone; the
// difference is the copies as the runtime does them (the copy queue's thread, into arenas that
// are fresh each run, as offloaded residuals are).
double link_bytes_per_s(const CompileOptions& options, int repeats) {
  ShapeDtype vec{{kStreamElements}};
  std::vector<Array> args{ones(vec.shape)};
  Compiled round_trip = jit([](Tensor x) { return sum(device_put(device_put(x, MemoryKind::pinned_host), MemoryKind::device)); },
                            "calibrate_copies")
                            .lower(vec)
                            .compile(options);
  Compiled alone = jit([](Tensor x) { return sum(x); }, "calibrate_no_copies").lower(vec).compile(options);
  CostStats cost = round_trip.cost_analysis();
  double bytes = static_cast<double>(cost.bytes_to_host + cost.bytes_to_device);
  if (bytes <= 0) throw Error(ErrorCode::internal, "calibration: the round-trip program copies nothing");
  double with = median_seconds(round_trip, args, repeats);
  double without = median_seconds(alone, args, repeats);
  // Noise can make the difference vanish on a machine whose copies are nearly free; the whole time
  // of the round-trip program is then the honest (lower) bound on the rate.
  double copy_seconds = with - without > 0.05 * with ? with - without : with;
  return bytes / copy_seconds;
}

void check_rates(const Rates& r, std::string_view where) {
  for (auto [value, name] : {std::pair{r.compute_flops_per_s, "compute_flops_per_s"},
                             std::pair{r.memory_bytes_per_s, "memory_bytes_per_s"},
                             std::pair{r.link_bandwidth_bytes_per_s, "link_bandwidth_bytes_per_s"}})
    if (!(value > 0) || !std::isfinite(value))
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("{}: {} must be a positive, finite rate, got {}", where, name, value));
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

}  // namespace

Rates calibrate(const CalibrateOptions& options) {
  if (options.repeats < 1)
    throw Error(ErrorCode::invalid_argument, fmt::format("calibrate: repeats must be >= 1, got {}", options.repeats));
  CompileOptions compile;
  compile.backend = options.backend;
  Rates r;
  r.compute_flops_per_s = dot_flops_per_s(compile, options.repeats);
  r.memory_bytes_per_s = elementwise_bytes_per_s(compile, options.repeats);
  r.link_bandwidth_bytes_per_s = link_bytes_per_s(compile, options.repeats);
  check_rates(r, "calibrate");
  return r;
}

CompileOptions with_rates(CompileOptions options, const Rates& rates) {
  check_rates(rates, "with_rates");
  options.compute_flops_per_s = rates.compute_flops_per_s;
  options.memory_bytes_per_s = rates.memory_bytes_per_s;
  options.link_bandwidth_bytes_per_s = rates.link_bandwidth_bytes_per_s;
  return options;
}

std::string rates_cache_path() {
  if (std::string dir = env("FERRY_CACHE_DIR"); !dir.empty()) return dir + "/rates.json";
  if (std::string dir = env("XDG_CACHE_HOME"); !dir.empty()) return dir + "/ferry/rates.json";
  if (std::string home = env("HOME"); !home.empty()) return home + "/.cache/ferry/rates.json";
  throw Error(ErrorCode::invalid_argument,
              "no folder for the rates cache: set FERRY_CACHE_DIR, XDG_CACHE_HOME or HOME");
}

std::optional<Rates> load_rates(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::invalid_argument, fmt::format("cannot read the rates cache {}", path));
  std::stringstream text;
  text << in.rdbuf();
  Rates r;
  try {
    nlohmann::json j = nlohmann::json::parse(text.str());
    r.compute_flops_per_s = j.at("compute_flops_per_s").get<double>();
    r.memory_bytes_per_s = j.at("memory_bytes_per_s").get<double>();
    r.link_bandwidth_bytes_per_s = j.at("link_bandwidth_bytes_per_s").get<double>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::invalid_argument,
                fmt::format("the rates cache {} is not a rates file ({}); `ferry calibrate` rewrites it", path, e.what()));
  }
  check_rates(r, fmt::format("the rates cache {}", path));
  return r;
}

void save_rates(const Rates& rates, const std::string& path) {
  check_rates(rates, "save_rates");
  std::filesystem::path file(path);
  std::error_code ec;
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), ec);
  nlohmann::json j{{"compute_flops_per_s", rates.compute_flops_per_s},
                   {"memory_bytes_per_s", rates.memory_bytes_per_s},
                   {"link_bandwidth_bytes_per_s", rates.link_bandwidth_bytes_per_s}};
  // Written aside and renamed over the cache, so that a reader (another process calibrating at the
  // same time) sees the old file or the new one, never half of one.
  std::string aside = fmt::format("{}.{}.tmp", path, static_cast<long>(getpid()));
  std::ofstream out(aside, std::ios::binary | std::ios::trunc);
  out << j.dump(1) << "\n";
  out.close();
  std::filesystem::rename(aside, path, ec);
  if (!out || ec) {
    std::filesystem::remove(aside, ec);
    throw Error(ErrorCode::invalid_argument, fmt::format("cannot write the rates cache {}", path));
  }
}

CompileOptions calibrated_options(CompileOptions base) {
  std::optional<std::string> path;
  try {
    path = rates_cache_path();
  } catch (const Error&) {
    // No folder to cache in: measure every time rather than fail.
  }
  if (path)
    if (std::optional<Rates> cached = load_rates(*path)) return with_rates(std::move(base), *cached);
  Rates measured = calibrate({.backend = base.backend});
  if (path) try {
      save_rates(measured, *path);
    } catch (const Error&) {
      // A read-only cache folder costs a measurement next time, nothing else.
    }
  return with_rates(std::move(base), measured);
}

}  // namespace ferry
