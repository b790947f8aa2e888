// Calibration: the cost model's rates measured on this machine, with ferry's own kernels.
//
//   ferry::Rates r = ferry::calibrate();                      // a few hundred ms
//   ferry::CompileOptions o = ferry::calibrated_options();     // cached rates (measured once if none)
//   o.device_memory_limit = 64 << 20;
//
// Rates' defaults are this project's reference machine (docs/COST_MODEL.md, ferry/options.h); the
// estimated step time (CostStats::estimated_seconds) and the automatic planner's choices are only
// as good as the rates, so the command line and the benchmarks use calibrated ones. `ferry
// calibrate` measures and rewrites the cache.
#pragma once

#include <optional>
#include <string>

#include "ferry/jit.h"

namespace ferry {

struct CalibrateOptions {
  std::string backend = "cpu";
  int repeats = 7;  // timed runs of each program after one warm-up; the median is taken (>= 1)
};

// Measures the rates by compiling and running small programs on the backend: a square f32
// dot_general (FLOPs by the cost model / time), a chain of elementwise ops over arrays larger than
// the caches (bytes read and written by the cost model / time), a round trip of an array to
// pinned host memory and back through the copy queue (bytes copied / the time it adds to the same
// program without the round trip), a chain of tanh over an array the caches hold (evaluations /
// time), random bits (the cost model's FLOPs of threefry2x32 / time) and a batch of tiny matrix
// products (the time beyond their FLOPs at the dot rate, per product). INVALID_ARGUMENT for repeats < 1; a backend this build lacks is
// UNIMPLEMENTED, as for compile.
Rates calibrate(const CalibrateOptions& options = {});

// `options` with these rates (CompileOptions::rates; INVALID_ARGUMENT unless each is positive and
// finite).
CompileOptions with_rates(CompileOptions options, const Rates& rates);

// Where the rates are cached: $FERRY_CACHE_DIR/rates.json, else $XDG_CACHE_HOME/ferry/rates.json,
// else $HOME/.cache/ferry/rates.json. INVALID_ARGUMENT when none of those variables is set.
std::string rates_cache_path();

// Reads rates written by save_rates: nullopt when the file does not exist; INVALID_ARGUMENT (naming
// the file) when it is not such a file or a rate is not positive and finite.
std::optional<Rates> load_rates(const std::string& path);
// Writes the rates as JSON (creating the folder); INVALID_ARGUMENT when it cannot.
void save_rates(const Rates& rates, const std::string& path);

// `base` with the cached rates, measuring and caching them first when there is no cache. A cache
// that cannot be written is not an error (the measured rates are used); a corrupt one is
// INVALID_ARGUMENT (`ferry calibrate` rewrites it).
CompileOptions calibrated_options(CompileOptions base = {});

}  // namespace ferry
