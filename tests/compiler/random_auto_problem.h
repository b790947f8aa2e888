// Random planner problems (compiler/auto_problem.h) of a training step's shape, for the tests and
// the benchmark that hold the greedy solver to the exact reference.
//
// A chain of L layers on 2L+1 schedule positions: forward positions 0..L-1, backward positions
// L..2L. Candidate i is the activation layer i produces at position i and the backward pass reads
// at position 2L-i. Its options:
//   save       0 s, holds its bytes over [i, 2L-i];
//   offload    the exposed part of sending it to the host and back (bytes / link bandwidth, times
//              an exposure the compute around it cannot hide), holds them over [i, i+1] (until the
//              copy is done) and [2L-i-1, 2L-i] (fetched one position early);
//   recompute  its FLOPs at the compute rate, holds them over [2L-i-1, 2L-i].
// Some candidates have no offload option. The base is the parameters plus a per-position working
// set. The limit lies between the peak of every candidate recomputed (every option's bytes are
// smallest there, so some choice fits) and the peak of every candidate saved.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "compiler/auto_problem.h"

namespace ferry::testing {

struct RandomAutoProblemOptions {
  int min_layers = 4, max_layers = 48;
  double min_bytes = 1 << 20, max_bytes = 1 << 30;  // an activation's bytes, log-uniform
  double no_offload = 0.2;                          // the share of candidates that cannot be offloaded
};

inline compiler::AutoProblem random_auto_problem(uint32_t seed, const RandomAutoProblemOptions& o = {}) {
  using compiler::AutoOption;
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 7);
  auto uniform = [&](double a, double b) { return std::uniform_real_distribution<double>(a, b)(rng); };
  auto log_uniform = [&](double a, double b) { return std::exp(uniform(std::log(a), std::log(b))); };
  const int layers = std::uniform_int_distribution<int>(o.min_layers, o.max_layers)(rng);
  const int n = 2 * layers + 1;
  const double link = log_uniform(8e9, 64e9);     // bytes/s each way
  const double flops_rate = log_uniform(1e12, 1e14);
  // Layers of a model are often alike: draw a few sizes and give each layer one of them, or its own.
  std::vector<double> sizes;
  for (int k = std::uniform_int_distribution<int>(1, 4)(rng); k > 0; --k) sizes.push_back(log_uniform(o.min_bytes, o.max_bytes));
  const bool alike = uniform(0, 1) < 0.5;

  compiler::AutoProblem p;
  const double params = log_uniform(o.min_bytes, o.max_bytes * 4);
  p.base.resize(static_cast<size_t>(n));
  for (int q = 0; q < n; ++q) p.base[static_cast<size_t>(q)] = static_cast<int64_t>(params + uniform(0, 2) * o.min_bytes);
  for (int i = 0; i < layers; ++i) {
    const double size = alike ? sizes[std::uniform_int_distribution<size_t>(0, sizes.size() - 1)(rng)]
                              : log_uniform(o.min_bytes, o.max_bytes);
    const int64_t bytes = static_cast<int64_t>(size) + std::uniform_int_distribution<int64_t>(0, 4095)(rng);
    const int back = 2 * layers - i;
    compiler::AutoCandidate c;
    c.label = "layer " + std::to_string(i);
    c.options.push_back(AutoOption{AutoOption::Kind::save, 0.0, {{i, back, bytes}}});
    if (uniform(0, 1) >= o.no_offload) {
      const double exposure = uniform(0, 1) < 0.2 ? 0.0 : uniform(0.02, 1.0);
      c.options.push_back(AutoOption{AutoOption::Kind::offload, exposure * 2.0 * static_cast<double>(bytes) / link,
                                     {{i, i + 1, bytes}, {back - 1, back, bytes}}});
    }
    const double flops_per_byte = log_uniform(0.5, 512);  // elementwise chains to matmuls
    c.options.push_back(AutoOption{AutoOption::Kind::recompute, flops_per_byte * static_cast<double>(bytes) / flops_rate,
                                   {{back - 1, back, bytes}}});
    p.candidates.push_back(std::move(c));
  }
  auto peak_of = [&](bool saved) {
    std::vector<int> choice(p.candidates.size());
    for (size_t c = 0; c < choice.size(); ++c) choice[c] = saved ? 0 : static_cast<int>(p.candidates[c].options.size()) - 1;
    return compiler::evaluate(p, choice).peak;
  };
  const int64_t lo = peak_of(false), hi = peak_of(true);
  p.limit = lo + static_cast<int64_t>(uniform(0, 1) * static_cast<double>(hi - lo));
  return p;
}

}  // namespace ferry::testing
