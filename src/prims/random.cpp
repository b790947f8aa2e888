// threefry2x32(k0, k1, x0, x1) -> (y0, y1): the Threefry-2x32 block cipher (20 rounds) that
// jax.random is built on, elementwise on i32 values read as their uint32 bit patterns (ferry has no
// unsigned dtype). The four operands share one shape, apart from rank-0 keys.
#include <fmt/format.h>

#include "prims/families.h"
#include "prims/rule_helpers.h"
#include "ferry/tensor.h"

namespace ferry::prims {
namespace {

std::vector<ir::Type> threefry_rule(std::span<const ir::Type> in, const ir::Params&) {
  MemoryKind kind = detail::check_operands(in);
  for (const ir::Type& t : in)
    if (t.dtype != DType::i32) detail::invalid(fmt::format("operands must be i32, got {}", dtype_name(t.dtype)));
  const ir::Type& x0 = in[2];
  if (in[3].shape != x0.shape)
    detail::invalid(fmt::format("counts differ in shape: {} and {}", shape_string(x0.shape), shape_string(in[3].shape)));
  for (int k = 0; k < 2; ++k)
    if (in[k].rank() != 0 && in[k].shape != x0.shape)
      detail::invalid(fmt::format("key word {} has shape {}, neither rank 0 nor the counts' {}", k,
                                  shape_string(in[k].shape), shape_string(x0.shape)));
  ir::Type out{DType::i32, x0.shape, kind};
  return {out, out};
}

// About 20 rounds of 3 integer operations on each of two words.
Cost threefry_cost(std::span<const ir::Type> in, std::span<const ir::Type> out, const ir::Params&) {
  return Cost{.flops = 120.0 * static_cast<double>(out[0].num_elements()), .bytes_read = detail::bytes_of(in),
              .bytes_written = detail::bytes_of(out)};
}

}  // namespace

void register_random(Table& t) {
  t[static_cast<size_t>(Primitive::threefry2x32)] =
      PrimitiveInfo{.shape_rule = threefry_rule, .cost_rule = threefry_cost};
}

}  // namespace ferry::prims
