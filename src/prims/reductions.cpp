// Reductions over a set of axes; the output drops those axes (no keepdims in the IR).
#include <fmt/format.h>

#include "prims/families.h"
#include "prims/rule_helpers.h"

namespace ferry::prims {
namespace {

using detail::invalid;

std::vector<ir::Type> reduce_rule(std::span<const ir::Type> in, const ir::Params& params) {
  MemoryKind kind = detail::check_operands(in);
  const auto& axes = detail::params_as<ir::ReduceParams>(params).axes;
  const ir::Type& x = in[0];
  if (x.dtype == DType::boolean) invalid("not defined for bool operands");
  std::vector<bool> reduced(static_cast<size_t>(x.rank()), false);
  for (int64_t a : axes) {
    detail::check_axis(a, x.rank(), "axis");
    if (reduced[static_cast<size_t>(a)])
      invalid(fmt::format("axes {} lists axis {} twice", detail::dims_string(axes), a));
    reduced[static_cast<size_t>(a)] = true;
  }
  Shape out;
  for (size_t i = 0; i < reduced.size(); ++i)
    if (!reduced[i]) out.push_back(x.shape[i]);
  return {ir::Type{x.dtype, out, kind}};
}

// One flop (add or max) per input element.
Cost reduce_cost(std::span<const ir::Type> in, std::span<const ir::Type> out, const ir::Params&) {
  return Cost{.flops = static_cast<double>(detail::elements_of(in)), .bytes_read = detail::bytes_of(in),
              .bytes_written = detail::bytes_of(out)};
}

}  // namespace

void register_reductions(Table& t) {
  for (auto [p, name] : {std::pair{Primitive::reduce_sum, "reduce_sum"}, std::pair{Primitive::reduce_max, "reduce_max"}})
    t[static_cast<size_t>(p)] = PrimitiveInfo{.prim = p, .name = name, .num_inputs = 1, .params = ir::ReduceParams{},
                                              .shape_rule = reduce_rule, .cost_rule = reduce_cost, .in_place = kNoInPlace};
}

}  // namespace ferry::prims
