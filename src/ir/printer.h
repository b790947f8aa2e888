// The text form of a Program (see parser.h for the grammar):
//
//   program @main(%0: f32[2,3], %1: f32[3]{pinned_host}) {
//     %2 = sin %0 : f32[2,3]
//     %3 = broadcast_in_dim[shape=[2,3], broadcast_dimensions=[1]] %1 : f32[2,3]{pinned_host}
//     %4 = mul %2, %3 : f32[2,3] @"layer 1"
//     return %4
//   }
#pragma once

#include <string>

#include "ir/program.h"

namespace ferry::ir {

// Prints `p` canonically: values are renumbered in definition order (inputs, then each equation's
// outputs), so parse(print(p)) prints the same text. Subprograms print as nested `program` blocks,
// each numbering its own values from %0. The text ends with a newline.
//
// Never throws on a malformed program (this is what error messages and debugging print): a
// reference to a value not defined yet prints as `%?<id>`, a missing type as `<no type>`.
std::string print(const Program& p);

// How reports and errors name equation e of `p`: "%17 = tanh" ("%3, ..., %9 = scan" for several
// outputs), with the numbers print() gives its outputs, so a reader finds it in the printed program. The number is positional (inputs, then
// the outputs of the equations before e), so it is defined even for a malformed program.
std::string equation_label(const Program& p, size_t e);

}  // namespace ferry::ir
