// The shared gradient checker: ferry's reverse-mode gradients against central finite differences,
// in f64. Every layer that differentiates something (autodiff, scan, checkpoint, offload) uses it.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "ferry/autodiff.h"
#include "ferry/ferry.h"

namespace ferry::testing {

using ScalarFn = std::function<Tensor(const std::vector<Tensor>&)>;

// f64 arrays of the given shapes with values uniform in [lo, hi), from `seed`.
std::vector<Array> random_f64(const std::vector<Shape>& shapes, uint32_t seed, double lo = -1.0, double hi = 1.0);

// grad(f)(args) computed by ferry (jit + grad), flattened per argument.
std::vector<std::vector<double>> ferry_gradients(const ScalarFn& f, const std::vector<Array>& args);

// d f / d args[i][j] by central differences (step eps), f evaluated by a compiled ferry program.
std::vector<std::vector<double>> numeric_gradients(const ScalarFn& f, const std::vector<Array>& args, double eps);

// Checks ferry's gradient of a scalar f64 function against central differences: each entry within
// tol * max(1, |numeric|). Reports the worst entry on failure.
void expect_gradients_match(const ScalarFn& f, const std::vector<Array>& args, double eps = 1e-6, double tol = 1e-6);

}  // namespace ferry::testing
