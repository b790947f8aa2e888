#include "prims/rule_helpers.h"

#include <fmt/format.h>

#include "ir/limits.h"

namespace ferry::prims::detail {

void invalid(const std::string& what) { throw Error(ErrorCode::invalid_argument, what); }

int64_t checked_elements(const Shape& shape, std::string_view what, DType dtype) {
  const std::string problem = ir::size_problem(dtype, shape);
  if (!problem.empty()) invalid(fmt::format("{} {} {}", what, shape_string(shape), problem));
  return num_elements(shape);
}

MemoryKind check_operands(std::span<const ir::Type> inputs) {
  for (const ir::Type& t : inputs) checked_elements(t.shape, "operand shape", t.dtype);
  if (inputs.empty()) return MemoryKind::device;
  MemoryKind kind = inputs[0].kind;
  for (const ir::Type& t : inputs)
    if (t.kind != kind)
      invalid(fmt::format("operands live in different memory kinds ({}, {})", memory_kind_name(kind),
                          memory_kind_name(t.kind)));
  return kind;
}

void check_axis(int64_t axis, int64_t rank, std::string_view what) {
  if (axis < 0 || axis >= rank)
    invalid(fmt::format("{} {} out of range for rank {}", what, axis, rank));
}

std::string dims_string(const ir::Dims& d) { return fmt::format("[{}]", fmt::join(d, ",")); }

int64_t bytes_of(std::span<const ir::Type> types) {
  int64_t n = 0;
  for (const ir::Type& t : types) n += t.size_bytes();
  return n;
}

int64_t elements_of(std::span<const ir::Type> types) {
  int64_t n = 0;
  for (const ir::Type& t : types) n += t.num_elements();
  return n;
}

Cost movement_cost(std::span<const ir::Type> inputs, std::span<const ir::Type> outputs, const ir::Params&) {
  return Cost{.flops = 0, .bytes_read = bytes_of(inputs), .bytes_written = bytes_of(outputs)};
}

Cost per_output_element_cost(std::span<const ir::Type> inputs, std::span<const ir::Type> outputs,
                             const ir::Params&) {
  return Cost{.flops = static_cast<double>(elements_of(outputs)), .bytes_read = bytes_of(inputs),
              .bytes_written = bytes_of(outputs)};
}

}  // namespace ferry::prims::detail
