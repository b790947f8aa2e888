// Checks and cost formulas shared by the primitive families' shape and cost rules. Private to
// src/prims: the rules throw ferry::Error(INVALID_ARGUMENT) with the bare problem, and
// infer_types adds the primitive's name and the operand types.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <variant>

#include "ferry/error.h"
#include "ir/params.h"
#include "ir/type.h"
#include "prims/registry.h"

namespace ferry::prims::detail {

[[noreturn]] void invalid(const std::string& what);

// The parameters struct a primitive takes. infer_types checks the kind before the shape rule runs,
// so a mismatch here (e.g. a cost query on a malformed equation) is an internal error.
template <class P> const P& params_as(const ir::Params& params) {
  if (const P* p = std::get_if<P>(&params)) return *p;
  throw Error(ErrorCode::internal, "primitive rule called with parameters of the wrong kind");
}

// Checks what every rule needs of its operands (types within ir/limits.h's size rule, one
// shared memory kind) and returns that kind; device when there are no operands.
MemoryKind check_operands(std::span<const ir::Type> inputs);

// Elements of `shape`, rejecting what no value of `dtype` may be (ir/limits.h: negative sizes, more
// than 32 dimensions or 2^62 bytes). `what` names the shape in messages ("shape", "new_sizes", ...).
int64_t checked_elements(const Shape& shape, std::string_view what, DType dtype);

// Rejects an axis outside [0, rank): "<what> 3 out of range for rank 2".
void check_axis(int64_t axis, int64_t rank, std::string_view what);

std::string dims_string(const ir::Dims& d);  // "[0,2]"

int64_t bytes_of(std::span<const ir::Type> types);
int64_t elements_of(std::span<const ir::Type> types);

// Data movement: no flops, reads every input and writes every output.
Cost movement_cost(std::span<const ir::Type> inputs, std::span<const ir::Type> outputs, const ir::Params&);
// One flop per output element; reads every input, writes every output.
Cost per_output_element_cost(std::span<const ir::Type> inputs, std::span<const ir::Type> outputs,
                             const ir::Params&);

}  // namespace ferry::prims::detail
