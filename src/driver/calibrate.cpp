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

#include "ferry/distributed.h"
#include "ferry/error.h"
#include "ferry/random.h"
#include "ferry/tensor.h"
#include "prims/registry.h"
#include "driver/lowered.h"

namespace ferry {
namespace {

// Sizes: the dot is large enough for BLAS to reach its steady rate (268 MFLOP); the elementwise and
// copy arrays (16 MiB each) are larger than a server's last-level cache, so they measure memory,
// not cache. Each program runs in a few to a few tens of milliseconds.
constexpr int64_t kDotSize = 512;
constexpr int64_t kStreamElements = int64_t{1} << 22;
constexpr int kElementwiseChain = 4;
constexpr int64_t kCachedElements = int64_t{1} << 16;
constexpr int kTranscendentalChain = 16;
constexpr int64_t kFusedElements = int64_t{1} << 18;  // 1 MiB per operand: the caches hold them
constexpr int kFusedChain = 64;
constexpr int64_t kTinyProducts = 2048, kTinySize = 4;

// The median wall time of `repeats` runs after one warm-up (which also sizes the run's bookkeeping):
// the statistic step times are reported by, so that an estimate and a measurement taken on the
// machine in the same state agree (the fastest run tracked the machine's best moments, and
// estimates fell 20-30% under median step times measured minutes later).
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
// and the run's only large allocation is its arena). Compiled without fusion, so that every op is
// a pass over memory and moves the bytes the traced program's cost counts (fused, the chain would
// read its operands once and the quotient would be no bandwidth at all).
double elementwise_bytes_per_s(CompileOptions options, int repeats) {
  options.fuse = false;
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

// An all-reduce between the launch's processes (when there are several): the ring bytes this
// process sends (cost_analysis's bytes_exchanged) over the time the collective adds to the same
// program without it.
double interconnect_bytes_per_s(const CompileOptions& options, int repeats) {
  ShapeDtype vec{{kStreamElements}};
  std::vector<Array> args{ones(vec.shape)};
  const std::string axis = distributed::axis_name();
  Compiled exchange = jit([axis](Tensor x) { return sum(psum(x, axis)); }, "calibrate_interconnect").lower(vec).compile(options);
  Compiled alone = jit([](Tensor x) { return sum(x); }, "calibrate_no_interconnect").lower(vec).compile(options);
  const double bytes = static_cast<double>(exchange.cost_analysis().bytes_exchanged);
  if (bytes <= 0) throw Error(ErrorCode::internal, "calibration: the all-reduce program exchanges nothing");
  double with = median_seconds(exchange, args, repeats);
  double without = median_seconds(alone, args, repeats);
  double seconds = with - without > 0.05 * with ? with - without : with;
  return bytes / seconds;
}

// tanh over an array the caches hold (256 KiB), many times in place: evaluations / time. Where the
// kernel is fast enough to be limited by the cache instead, the rate is that limit, which is what
// the cost model needs (a transcendental never costs less than this).
double transcendentals_per_s(const CompileOptions& options, int repeats) {
  ShapeDtype vec{{kCachedElements}};
  auto chain = [](Tensor x) {
    for (int i = 0; i < kTranscendentalChain; ++i) x = tanh(x);
    return sum(x);
  };
  Lowered lowered = jit(chain, "calibrate_transcendentals").lower(vec);
  Compiled c = lowered.compile(options);
  double seconds = median_seconds(c, {ones(vec.shape)}, repeats);
  return traced_cost(lowered).transcendentals / seconds;
}

// Arithmetic that is not a matrix product, as most of it runs: a long chain of adds and multiplies
// fused into one group over operands the caches hold, so the group's time is its arithmetic.
// The rate is the fused cost's FLOPs (one per element per op) over that time. On a backend
// without fusion the chain runs op by op, as such a backend runs all of its elementwise work.
double vector_flops_per_s(const CompileOptions& options, int repeats) {
  ShapeDtype vec{{kFusedElements}};
  auto chain = [](Tensor x, Tensor y) {
    Tensor t = x;
    for (int i = 0; i < kFusedChain; ++i) t = i % 2 == 0 ? t + y : t * y;
    return t;
  };
  Lowered lowered = jit(chain, "calibrate_vector").lower(vec, vec);
  Compiled c = lowered.compile(options);
  double seconds = median_seconds(c, {ones(vec.shape), full(vec.shape, 0.5)}, repeats);
  prims::Cost cost = traced_cost(lowered);
  return (cost.flops - cost.dot_flops) / seconds;
}

// A batch of tiny matrix products, whose FLOPs take next to nothing at the dot rate: the rest of
// their time, per product, is the fixed cost of each (a floor of 1 ns keeps it meaningful).
double dot_product_seconds(const CompileOptions& options, double flops_per_s, int repeats) {
  ShapeDtype batch{{kTinyProducts, kTinySize, kTinySize}};
  Lowered lowered = jit([](Tensor a, Tensor b) { return matmul(a, b); }, "calibrate_products").lower(batch, batch);
  Compiled c = lowered.compile(options);
  double seconds = median_seconds(c, {ones(batch.shape), ones(batch.shape)}, repeats);
  prims::Cost cost = traced_cost(lowered);
  return std::max((seconds - cost.dot_flops / flops_per_s) / cost.dot_products, 1e-9);
}

// Every rate of Rates, for checks, the cache file and CompileOptions alike.
struct RateField {
  double Rates::* rate;
  const char* name;
};
constexpr RateField kRateFields[] = {
    {&Rates::compute_flops_per_s, "compute_flops_per_s"},
    {&Rates::memory_bytes_per_s, "memory_bytes_per_s"},
    {&Rates::link_bandwidth_bytes_per_s, "link_bandwidth_bytes_per_s"},
    {&Rates::vector_flops_per_s, "vector_flops_per_s"},
    {&Rates::transcendentals_per_s, "transcendentals_per_s"},
    {&Rates::dot_product_seconds, "dot_product_seconds"},
};

constexpr std::ptrdiff_t kLegacyRates = 3;  // the rates caches had before the other three
// Which calibration programs measured a cache's rates: a cache of other programs is stale (2: the
// bandwidth measured unfused, the vector rate on a fused chain).
constexpr int kCalibrationVersion = 2;

void check_rates(const Rates& r, std::string_view where) {
  for (const RateField& f : kRateFields)
    if (!(r.*f.rate > 0) || !std::isfinite(r.*f.rate))
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("{}: {} must be a positive, finite rate, got {}", where, f.name, r.*f.rate));
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
  r.vector_flops_per_s = vector_flops_per_s(compile, options.repeats);
  r.transcendentals_per_s = transcendentals_per_s(compile, options.repeats);
  r.dot_product_seconds = dot_product_seconds(compile, r.compute_flops_per_s, options.repeats);
  // Measured where there are peers to exchange with (every process must calibrate together then);
  // else the default stands. Not cached: it is the launch's, not the machine's.
  if (distributed::is_initialized() && distributed::process_count() > 1)
    r.interconnect_bytes_per_s = interconnect_bytes_per_s(compile, options.repeats);
  check_rates(r, "calibrate");
  return r;
}

CompileOptions with_rates(CompileOptions options, const Rates& rates) {
  check_rates(rates, "with_rates");
  options.rates = rates;
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
    // A cache an older ferry wrote has the first three rates only: stale, not corrupt, once those
    // check out (calibrated_options measures again).
    bool stale = false;
    for (const RateField& f : kRateFields) {
      if (&f - kRateFields >= kLegacyRates && !j.contains(f.name)) {
        stale = true;
        r.*f.rate = 1;  // checked below with the rest, then not returned
        continue;
      }
      r.*f.rate = j.at(f.name).get<double>();
    }
    if (!j.contains("calibration") || j.at("calibration").get<int>() != kCalibrationVersion) stale = true;
    if (stale) {
      check_rates(r, fmt::format("the rates cache {}", path));
      return std::nullopt;
    }
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
  nlohmann::json j = nlohmann::json::object();
  for (const RateField& f : kRateFields) j[f.name] = rates.*f.rate;
  j["calibration"] = kCalibrationVersion;
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
