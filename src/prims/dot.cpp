// dot_general with XLA's dimension numbers: the output is [batch..., lhs free..., rhs free...],
// free dimensions in their operand order.
#include <fmt/format.h>

#include "prims/families.h"
#include "prims/rule_helpers.h"

namespace ferry::prims {
namespace {

using detail::dims_string;
using detail::invalid;

// Marks `dims` as used on one side (`side` is "lhs" or "rhs"), rejecting out-of-range entries and
// dimensions listed twice across that side's batch and contracting lists.
void mark(const ir::Dims& dims, std::vector<bool>& used, std::string_view side, std::string_view list) {
  for (int64_t d : dims) {
    if (d < 0 || d >= static_cast<int64_t>(used.size()))
      invalid(fmt::format("{}_{} dimension {} out of range for rank {}", side, list, d, used.size()));
    if (used[static_cast<size_t>(d)]) invalid(fmt::format("{} dimension {} is listed twice", side, d));
    used[static_cast<size_t>(d)] = true;
  }
}

void check_sizes(const ir::Dims& l, const ir::Dims& r, const ir::Type& lhs, const ir::Type& rhs,
                 std::string_view what) {
  if (l.size() != r.size())
    invalid(fmt::format("lhs_{0} {1} and rhs_{0} {2} have different lengths", what, dims_string(l), dims_string(r)));
  for (size_t i = 0; i < l.size(); ++i) {
    int64_t ls = lhs.shape[static_cast<size_t>(l[i])], rs = rhs.shape[static_cast<size_t>(r[i])];
    if (ls != rs)
      invalid(fmt::format("{} dimension sizes differ: lhs dim {} is {}, rhs dim {} is {}",
                          what == "batch" ? "batch" : "contracting", l[i], ls, r[i], rs));
  }
}

std::vector<ir::Type> dot_general_rule(std::span<const ir::Type> in, const ir::Params& params) {
  MemoryKind kind = detail::check_operands(in);
  const auto& dn = detail::params_as<ir::DotGeneralParams>(params).dims;
  const ir::Type &lhs = in[0], &rhs = in[1];
  if (lhs.dtype != rhs.dtype)
    invalid(fmt::format("operand dtypes differ: {} and {}", dtype_name(lhs.dtype), dtype_name(rhs.dtype)));
  if (lhs.dtype == DType::boolean) invalid("not defined for bool operands");
  std::vector<bool> lhs_used(lhs.shape.size(), false), rhs_used(rhs.shape.size(), false);
  mark(dn.lhs_batch, lhs_used, "lhs", "batch");
  mark(dn.lhs_contracting, lhs_used, "lhs", "contracting");
  mark(dn.rhs_batch, rhs_used, "rhs", "batch");
  mark(dn.rhs_contracting, rhs_used, "rhs", "contracting");
  check_sizes(dn.lhs_batch, dn.rhs_batch, lhs, rhs, "batch");
  check_sizes(dn.lhs_contracting, dn.rhs_contracting, lhs, rhs, "contracting");

  Shape out;
  for (int64_t d : dn.lhs_batch) out.push_back(lhs.shape[static_cast<size_t>(d)]);
  for (size_t i = 0; i < lhs_used.size(); ++i)
    if (!lhs_used[i]) out.push_back(lhs.shape[i]);
  for (size_t i = 0; i < rhs_used.size(); ++i)
    if (!rhs_used[i]) out.push_back(rhs.shape[i]);
  detail::checked_elements(out, "output shape", lhs.dtype);
  return {ir::Type{lhs.dtype, out, kind}};
}

// 2*B*M*N*K: a multiply and an add for each output element (B*M*N of them) per contracted index;
// B independent products.
Cost dot_general_cost(std::span<const ir::Type> in, std::span<const ir::Type> out, const ir::Params& params) {
  const auto& dn = detail::params_as<ir::DotGeneralParams>(params).dims;
  double k = 1, batch = 1;
  if (!in.empty()) {
    for (int64_t d : dn.lhs_contracting)
      if (d >= 0 && d < in[0].rank()) k *= static_cast<double>(in[0].shape[static_cast<size_t>(d)]);
    for (int64_t d : dn.lhs_batch)
      if (d >= 0 && d < in[0].rank()) batch *= static_cast<double>(in[0].shape[static_cast<size_t>(d)]);
  }
  double flops = 2.0 * static_cast<double>(detail::elements_of(out)) * k;
  return Cost{.flops = flops, .bytes_read = detail::bytes_of(in), .bytes_written = detail::bytes_of(out),
              .dot_flops = flops, .dot_products = batch};
}

}  // namespace

void register_dot(Table& t) {
  t[static_cast<size_t>(Primitive::dot_general)] =
      PrimitiveInfo{.shape_rule = dot_general_rule, .cost_rule = dot_general_cost};
}

}  // namespace ferry::prims
