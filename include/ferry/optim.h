// Optimizer steps written with traced operations, so that a training step (loss, gradients and
// the update) is one compiled program. Each takes and returns parameter lists.
#pragma once

#include <vector>

#include "ferry/tensor.h"

namespace ferry::optim {

// v <- momentum * v + g;  p <- p - lr * v.
struct SgdMomentumResult {
  std::vector<Tensor> params, velocity;
};
SgdMomentumResult sgd_momentum(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                               const std::vector<Tensor>& velocity, double lr, double momentum);

// Adam (Kingma & Ba) with bias correction; `step` is the scalar count of updates so far (f32),
// returned incremented.
struct AdamResult {
  std::vector<Tensor> params, m, v;
  Tensor step;
};
AdamResult adam(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& m,
                const std::vector<Tensor>& v, const Tensor& step, double lr, double b1 = 0.9, double b2 = 0.999,
                double eps = 1e-8);

}  // namespace ferry::optim
