// The VJP rules of the primitives without bodies, one table indexed by the op table's ids (the
// control-flow rules, which trace their bodies, are ControlFlowVjp in linearize.h): given the
// equation, its primal inputs and outputs as traced tensors and the cotangents of its outputs
// (undefined Tensor = zero), a rule returns one cotangent per input (undefined = zero / not
// differentiable). Rules are written with the traced operations themselves, so they can be
// differentiated again.
#pragma once

#include <array>
#include <span>
#include <vector>

#include "ferry/tensor.h"
#include "ir/program.h"

namespace ferry::transforms {

using VjpRule = std::vector<Tensor> (*)(const ir::Equation& eq, std::span<const Tensor> primals_in,
                                        std::span<const Tensor> primals_out, std::span<const Tensor> cotangents_out);

// nullptr where the primitive has none (UNIMPLEMENTED when differentiated).
VjpRule vjp_rule(Primitive p);

using VjpTable = std::array<VjpRule, ir::kNumOps>;
inline void set_vjp(VjpTable& t, Primitive p, VjpRule rule) { t[static_cast<size_t>(p)] = rule; }

// Each family's rules (vjp_<family>.cpp).
void register_elementwise_vjps(VjpTable& t);  // unary and binary arithmetic, comparisons, select, converts
void register_structural_vjps(VjpTable& t);   // shape, reductions, dot, indexing, memory, identities, random
void register_model_vjps(VjpTable& t);        // erf, log1p, clamp, reductions by index, cumulative, gather/scatter
void register_collective_vjps(VjpTable& t);   // psum, all_gather, psum_scatter, axis_index

}  // namespace ferry::transforms
