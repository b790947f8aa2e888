// What a `fused` equation's body may hold, and how its values map onto the one loop that computes
// it (compiler/fuse.h makes such bodies; the CPU's fused kernel runs them; the verifier checks them
// through fused's shape rule).
//
// A body is a program of f32, i32 and bool values on the device, made of elementwise primitives
// (unary, binary, comparisons, select, clamp, convert_element_type among f32, i32 and bool,
// bitcast_convert_type between f32 and i32, threefry2x32 with its two words, the i32 shifts and
// bitwise operations, and the identities stop_gradient and checkpoint_name), broadcast_in_dim,
// constant, iota, reshape, and reduce_sum/max/min of f32 over trailing axes. i32 values take exact
// integer arithmetic only (no division, power, clamp or reduction). It has a *domain* D: the largest
// element count, in the shape of the values whose layout matters (a reduction's operand, a
// broadcast's result from a row or a source), else of the first value of that count; every
// reduction reduces the same k trailing axes of D (k = 0 when there is none). Each value is then
// one of:
//   full   -- D's elements: shape D, or another shape of as many elements (the same elements in the
//             same row-major order, as a reshape or a flat iota makes them);
//   row    -- shape D without its k trailing axes (k > 0): one element per row, a reduction's result;
//   scalar -- one element, the same for every point (scalar constants and operands, and the rows
//             of a domain that has only one);
//   source -- a body input of another shape, read only through broadcast_in_dim (a bias, say).
// Elementwise operations take full or scalar operands to a full result, or row or scalar operands
// to a row result; broadcast_in_dim makes a full value of shape D of a row (along the trailing
// axes) or a source, a full value of a scalar or of a full value (same shape), or a row value of a
// scalar; iota makes a full value (counted from each element's position in its own shape) or a
// scalar; reshape keeps a full value full and a scalar scalar. So a kernel can run the body one
// block of whole rows at a time, in order, keeping only that block of each value.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "ir/program.h"

namespace ferry::prims {

enum class FusedClass : uint8_t { full, row, scalar, source };

// The elements of a block of the fused kernel: 4 KiB of f32 per value, so a block's values stay in
// L1/L2 and on the running thread's stack. Fusion takes a reduction into a group only while one
// row fits a block (compiler/fuse.h); the kernel runs longer rows too, in blocks of one row.
inline constexpr int64_t kFusedBlock = 1024;

struct FusedLayout {
  Shape domain;
  int64_t reduced_axes = 0;  // k
  int64_t rows = 0;          // elements of the domain without its k trailing axes
  int64_t cols = 1;          // elements of the k trailing axes (1 when k = 0)
  std::vector<FusedClass> value_class;  // by body ValueId
};

// Whether p may be an equation of a fused body (dtypes and shapes aside).
bool fusible_primitive(Primitive p);

// The layout of a body, or INVALID_ARGUMENT saying what breaks the rules above. The body must be
// a verified program. It is fused_layout_params, then check_fused_equation for every equation, then
// the check that the body returns values it computes.
FusedLayout fused_layout(const ir::Program& body);

// The parts of the layout that the body's values decide as a whole (domain, reduced axes, rows and
// columns; value_class left empty), or INVALID_ARGUMENT (a value that is not f32, i32 or bool on
// the device; reductions of different axes).
FusedLayout fused_layout_params(const ir::Program& body);
// The class of a value of shape s under layout l: its class if it computes there, else source.
FusedClass fused_class(const FusedLayout& l, const Shape& s);
// INVALID_ARGUMENT where eq breaks the rules above under layout l; every value's class is
// fused_class of its shape. type_of gives the types of eq's values (of the body, or of the program
// whose equations a fusion pass is grouping: the check reads types only). So a growing group need
// only check its new equations while its layout stays the same (compiler/fuse.cpp).
void check_fused_equation(const FusedLayout& l, const ir::Equation& eq,
                          const std::function<const ir::Type&(ir::ValueId)>& type_of);

// The inputs whose buffer a result of the same byte size may take over (buffer assignment's
// in-place candidates): all but the sources (read anywhere). A block of rows reads full and row
// inputs only at its own rows, and every equal-sized pairing of a full or row input with a result
// (f32, i32 or bool) covers the same bytes per block, which the kernel writes after all of the block's
// reads. Scalar inputs are read by every block, and scalar results written by the first block,
// which the kernel runs after all the others.
std::vector<size_t> fused_in_place_inputs(const ir::Program& body);

}  // namespace ferry::prims
