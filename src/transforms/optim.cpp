#include "ferry/optim.h"

#include <fmt/format.h>

#include "ferry/error.h"

namespace ferry::optim {
namespace {
void check_sizes(const char* what, size_t params, size_t grads, size_t state) {
  if (grads != params || state != params)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("{}: {} parameters, {} gradients and {} state tensors; they must match", what, params, grads, state));
}
}  // namespace

SgdMomentumResult sgd_momentum(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                               const std::vector<Tensor>& velocity, double lr, double momentum) {
  check_sizes("sgd_momentum", params.size(), grads.size(), velocity.size());
  SgdMomentumResult r;
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor v = velocity[i] * momentum + grads[i];
    r.velocity.push_back(v);
    r.params.push_back(params[i] - v * lr);
  }
  return r;
}

AdamResult adam(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& m,
                const std::vector<Tensor>& v, const Tensor& step, double lr, double b1, double b2, double eps) {
  check_sizes("adam", params.size(), grads.size(), m.size());
  check_sizes("adam", params.size(), grads.size(), v.size());
  AdamResult r;
  r.step = step + 1.0;
  // Bias corrections 1 - b^t, as scalars of the step's dtype.
  Tensor c1 = 1.0 - pow(b1, r.step), c2 = 1.0 - pow(b2, r.step);
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor mi = m[i] * b1 + grads[i] * (1.0 - b1);
    Tensor vi = v[i] * b2 + grads[i] * grads[i] * (1.0 - b2);
    r.m.push_back(mi);
    r.v.push_back(vi);
    Tensor m_hat = mi / broadcast_to(convert(c1, mi.dtype()), mi.shape());
    Tensor v_hat = vi / broadcast_to(convert(c2, vi.dtype()), vi.shape());
    r.params.push_back(params[i] - m_hat / (sqrt(v_hat) + eps) * lr);
  }
  return r;
}

}  // namespace ferry::optim
