// The IR verifier: checks that a Program is well formed before a pass or the runtime relies on it.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "ir/program.h"

namespace ferry::ir {

// The types an equation's outputs must have, given its operands' (prims::infer_types, which sits
// above the IR: prims/verify.h passes it). INVALID_ARGUMENT saying what is wrong otherwise.
using TypeRule = std::function<std::vector<Type>(const Equation& eq, std::span<const Type> inputs)>;

// Throws ferry::Error(INVALID_ARGUMENT) unless `p` is well formed:
// - every value type has non-negative dimensions and a byte size that fits in int64;
// - every value id used (program inputs and outputs, equation inputs and outputs) is in range;
// - single assignment: each value is defined once, as a program input or an equation output, and is
//   defined before any equation uses it;
// - every equation's operands satisfy its primitive's shape rule, and its declared outputs have
//   exactly the count and types that `types` gives;
// - subprograms (with their own value numbering) are well formed too, recursively.
// The message names the program, the equation index and primitive, and the problem. Runs in time
// linear in the size of the program (a subprogram shared by several equations is checked once).
// prims::verify (prims/verify.h) runs it with the primitives' shape rules.
void verify(const Program& p, const TypeRule& types);

}  // namespace ferry::ir
