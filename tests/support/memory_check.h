// The one helper end-to-end tests run compiled programs through: it runs the program and checks
// ferry's accounting promise, that the device (and host) high-water marks measured while running
// equal the peaks planned at compile time, and that the planned fields add up (peak = arguments +
// outputs + temporaries - aliased, per side).
#pragma once

#include <string>
#include <vector>

#include "ferry/ferry.h"

namespace ferry::testing {

std::vector<Array> run_checked(const Compiled& compiled, const std::vector<Array>& args);

// "" when peak = arguments + outputs + temporaries - aliased holds for the device and the host
// fields, and every field is >= 0; else what does not add up.
std::string stats_mismatch(const MemoryStats& stats);

// The same promises as a value, for callers that must decide for themselves (the property tests'
// shrinker): "" when the last run's measured high-water marks equal the planned peaks and the
// planned fields add up, else what differs.
std::string high_water_mismatch(const Compiled& compiled);

inline void append_args(std::vector<Array>& out, const Array& a) { out.push_back(a); }
inline void append_args(std::vector<Array>& out, const std::vector<Array>& as) { out.insert(out.end(), as.begin(), as.end()); }

// f(args...) through lower, compile and run_checked.
template <class F, class... Args> std::vector<Array> jit_checked(const Jitted<F>& f, const Args&... args) {
  std::vector<Array> flat;
  (append_args(flat, args), ...);
  return run_checked(f.lower(args...).compile(), flat);
}

}  // namespace ferry::testing
