// convert_element_type: every dtype to every dtype, in tiles spread over the threads (tiles.h).
#include <cstring>

#include "runtime/cpu/check.h"
#include "runtime/cpu/convert.h"
#include "runtime/cpu/kernel_groups.h"
#include "runtime/cpu/tiles.h"

namespace ferry::runtime::cpu {
namespace {

template <class To, class From> void convert_loop(const From* x, To* y, int64_t n) {
  if constexpr (std::is_same_v<From, bool>) {
    // Read bytes, so any nonzero byte counts as true.
    const auto* b = reinterpret_cast<const uint8_t*>(x);
    for (int64_t i = 0; i < n; ++i) y[i] = convert_value<To>(b[i] != 0);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = convert_value<To>(load(x[i]));
  }
}

}  // namespace

void convert_kernel(const ir::Equation& eq, std::span<const ConstView> inputs,
                    std::span<const MutView> outputs, Workspace& workspace) {
  expect_arity(eq, inputs, outputs, 1);
  const ir::Type& in = *inputs[0].type;
  const ir::Type& out = *outputs[0].type;
  if (in.num_elements() != out.num_elements()) kernel_bug(eq, "operand and result differ in size");
  const int64_t n = out.num_elements();
  if (n == 0) return;
  if (in.dtype == out.dtype && in.dtype != DType::boolean) {
    const size_t width = dtype_size(in.dtype);
    for_each_tile(n, [&](int64_t b, int64_t e) {
      std::memcpy(static_cast<char*>(outputs[0].data) + b * width, static_cast<const char*>(inputs[0].data) + b * width,
                  static_cast<size_t>(e - b) * width);
    });
    return;
  }
  visit_dtype(in.dtype, [&]<class From>(TypeTag<From>) {
    visit_dtype(out.dtype, [&]<class To>(TypeTag<To>) {
      for_each_tile(n, [&](int64_t b, int64_t e) { convert_loop(inputs[0].as<From>() + b, outputs[0].as<To>() + b, e - b); });
    });
  });
}

}  // namespace ferry::runtime::cpu
