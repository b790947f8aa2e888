#include "runtime/cpu/erf_inv.h"

#include <cmath>
#include <limits>

namespace ferry::runtime::cpu {
namespace {

float erf_inv_giles(float x) {
  static constexpr float kSmall[9] = {2.81022636e-08f, 3.43273939e-07f, -3.5233877e-06f, -4.39150654e-06f,
                                      0.00021858087f,  -0.00125372503f, -0.00417768164f, 0.246640727f,
                                      1.50140941f};
  static constexpr float kLarge[9] = {-0.000200214257f, 0.000100950558f, 0.00134934322f, -0.00367342844f,
                                      0.00573950773f,   -0.0076224613f,  0.00943887047f, 1.00167406f,
                                      2.83297682f};
  if (std::fabs(x) == 1.0f) return x * std::numeric_limits<float>::infinity();
  float w = -std::log1p(-x * x);
  const bool small = w < 5.0f;
  const float* c = small ? kSmall : kLarge;
  w = small ? w - 2.5f : std::sqrt(w) - 3.0f;
  float p = c[0];
  for (int i = 1; i < 9; ++i) p = std::fma(p, w, c[i]);  // XLA contracts c + p * w into one multiply-add
  return p * x;
}

}  // namespace

float erf_inv_of(float x) { return erf_inv_giles(x); }

double erf_inv_of(double x) {
  if (!(std::fabs(x) < 1.0)) return std::fabs(x) == 1.0 ? x * std::numeric_limits<double>::infinity() : NAN;
  double y = erf_inv_giles(static_cast<float>(x));
  for (int i = 0; i < 2; ++i)  // Newton on erf(y) = x: erf'(y) = 2/sqrt(pi) exp(-y^2)
    y -= (std::erf(y) - x) / (1.1283791670955126 * std::exp(-y * y));
  return y;
}

}  // namespace ferry::runtime::cpu
