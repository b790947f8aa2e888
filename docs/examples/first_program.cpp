// The README's first program, whole: the README quotes this file from its #include on, and the
// docs.snippets test checks that it still does. A test (docs.first_program): it exits non-zero
// unless the loss is what the arithmetic says.
#include <cmath>
#include <iostream>
#include <vector>

#include <ferry/ferry.h>
namespace fy = ferry;

int main() {
  auto f = fy::jit([](fy::Tensor x, std::vector<fy::Tensor> params) {
    fy::Tensor h = fy::tanh(fy::matmul(x, params[0]) + params[1]);
    return fy::sum(h * h);
  });
  fy::Lowered lowered = f.lower(fy::ones({8, 16}), std::vector{fy::ones({16, 32}), fy::zeros({32})});
  std::cout << lowered.as_text();          // the program, in ferry's IR text
  fy::Compiled c = lowered.compile();
  std::vector<fy::Array> out = c(fy::ones({8, 16}), std::vector{fy::ones({16, 32}), fy::zeros({32})});
  float loss = out[0].to_vector<float>()[0];
  std::cout << "loss " << loss << "\n";    // 8 x 32 entries of tanh(16)^2: 256
  return std::abs(loss - 256) < 1e-3 ? 0 : 1;
}
