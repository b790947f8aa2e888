// The primitive operations of ferry's IR: one line each in the op table (src/ir/ops.def), a shape
// rule and cost (src/prims), a VJP rule (src/transforms) and a kernel per backend.
// `ferry::prim::dot_general` names one in user code (custom policies).
#pragma once

#include <cstdint>
#include <string_view>

namespace ferry {

// The traceable primitives, one per line of ferry's op table (src/ir/ops.def, where each is
// described: operands, parameters, traits), in its order. Their semantics follow jax.lax's
// primitives of the same names; logical_not/and/or/xor are logical on bool and bitwise on i32,
// select(pred, on_true, on_false), clamp(lo, x, hi), threefry2x32 is the Threefry-2x32 block cipher
// on i32 bit patterns, checkpoint_name tags a value for name-based checkpoint policies, and scan,
// checkpoint, custom_vjp, cond and while_loop carry sub-programs.
enum class Primitive : uint8_t {
#include "ferry/primitive_list.inc"
};

// Traceable primitives (the compiler adds its own after these, in the IR only).
#include "ferry/primitive_count.inc"

std::string_view primitive_name(Primitive p);

namespace prim {
using enum Primitive;
}

}  // namespace ferry
