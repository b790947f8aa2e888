// Simplification of constants and identities, run after differentiation (which leaves many behind:
// `1 - t*t` in tanh's VJP, the cotangent of a sum broadcast to its operand's shape, zeros where no
// cotangent flows).
//
// Glossary: a *splat* is a value whose elements all equal one scalar: a constant, a broadcast_in_dim
// of a rank-0 value, a reshape, transpose or broadcast of a splat, or an elementwise op of splats.
//
// Guarantees:
// - No splat is materialized at its full shape for an elementwise reader: binary ops, comparisons
//   and select read its rank-0 scalar instead (their kernels read it with stride 0), and an
//   elementwise op of splats computes one scalar. A splat is materialized (a constant, or a
//   broadcast_in_dim of its scalar) only just before a reader that needs it in full (a dot, a
//   reduction, a copy, a body, a program output).
// - Identities fold away, bit for bit under IEEE 754 arithmetic (except that x*1 and x/1 may quiet
//   a signalling NaN, as any arithmetic does):
//     x*1, 1*x, x/1                 -> x
//     x+(-0), (-0)+x, x-(+0)        -> x   for floats: x+(+0) is not x, since -0 + +0 = +0
//     x+0, 0+x, x-0                 -> x   for i32
//     max(x,-inf), min(x,+inf)      -> x   (also for NaN: max and min propagate it; i32: INT_MIN, INT_MAX)
//     select(true,a,b) -> a, select(false,a,b) -> b, select(p,a,a) -> a
//     convert_element_type to the same dtype, reshape to the same shape, the identity transpose
//     or broadcast_in_dim -> the operand
//   Nothing else folds: no x*0 (NaN, inf and -0 make it not 0), no x+(+0), no reassociation.
// - The value an output or a folded equation becomes may be an input or another output;
//   materialize_outputs (which runs later) gives such outputs their own buffers.
// Bodies are simplified too. What the pass leaves unused is removed. The tracer never makes
// rank-0 operands beside larger ones, so differentiation (which runs before) never sees them.
#pragma once

#include "ir/program.h"

namespace ferry::compiler {

// Returns whether the program changed.
bool simplify(ir::Program& program);

}  // namespace ferry::compiler
