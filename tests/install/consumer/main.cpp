// Traces, compiles and runs a tiny program through the installed headers and library.
#include <ferry/ferry.h>

#include <cstdio>

int main() {
  auto f = ferry::jit([](ferry::Tensor x) { return ferry::sum(x * 2.0); });
  auto out = f.lower(ferry::ones({3})).compile()(ferry::ones({3}));
  float v = out[0].to_vector<float>()[0];
  std::printf("sum(2 * ones(3)) = %g\n", v);
  return v == 6.0f ? 0 : 1;
}
