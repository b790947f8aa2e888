// The limits every way into ferry applies alike: the tracer, Array, the IR parser and verifier, and
// the safetensors reader. One rule each, so that whatever one path accepts the others accept too
// (a traced program's text parses back; an array a file holds can be allocated).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ferry/types.h"
#include "ir/type.h"

namespace ferry::ir {

struct Program;

// The most bytes a type may span. Each dimension counts at least 1, so a zero-size dimension does
// not excuse the others: strides and offsets still multiply them, and those must not overflow.
inline constexpr int64_t kMaxTypeBytes = int64_t{1} << 62;
// The most levels of subprograms below a top-level program (scan in scan in ...): the parser, the
// verifier and every pass recurse once per level.
inline constexpr int kMaxNesting = 64;

// Why a value of this dtype and shape may not exist, as a clause after the type ("has more than 32
// dimensions (ferry's limit)", "has a negative dimension size", "is too large: ..."); empty when
// it may. Ranks above kMaxRank, negative dimensions, and more than kMaxTypeBytes are refused.
std::string size_problem(DType dtype, const Shape& shape);
// INVALID_ARGUMENT "<what>: <type> <problem>" when size_problem finds one.
void check_size(DType dtype, const Shape& shape, std::string_view what);

// Levels of subprograms below `p` (0 when it has none).
int nesting_depth(const Program& p);

}  // namespace ferry::ir
