// The one helper end-to-end tests run compiled programs through: it runs the program and checks
// ferry's accounting promise, that the device (and host) high-water marks measured while running
// equal the peaks planned at compile time.
#pragma once

#include <string>
#include <vector>

#include "ferry/ferry.h"

namespace ferry::testing {

std::vector<Array> run_checked(const Compiled& compiled, const std::vector<Array>& args);

// The same promise as a value, for callers that must decide for themselves (the property tests'
// shrinker): "" when the last run's measured high-water marks equal the planned peaks, else what differs.
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
