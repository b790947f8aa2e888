// Each primitive family fills its entries of the registry table (src/prims/<family>.cpp).
#pragma once

#include <array>

#include "ir/ops.h"
#include "prims/registry.h"

namespace ferry::prims {

using Table = std::array<PrimitiveInfo, ir::kNumOps>;

void register_elementwise(Table& t);  // unary, binary, comparisons, select, convert_element_type
void register_shape_ops(Table& t);    // iota, constant, broadcast_in_dim, reshape, transpose
void register_reductions(Table& t);   // reduce_sum, reduce_max
void register_dot(Table& t);          // dot_general
void register_indexing(Table& t);     // slice, dynamic_slice, dynamic_update_slice, concatenate
void register_gather_scatter(Table& t);  // gather, scatter_add
void register_random(Table& t);       // threefry2x32
void register_memory(Table& t);       // device_put, stop_gradient
void register_control_flow(Table& t); // scan, checkpoint, checkpoint_name, custom_vjp, cond, while_loop
void register_copies(Table& t);       // copy_start, copy_done
void register_fused(Table& t);        // fused (fused.cpp; its body's rules in fused_body.h)
void register_collectives(Table& t);  // psum, all_gather, psum_scatter, axis_index

// A primitive's shape rule and cost (its name, operands, parameters and in-place inputs come from
// the op table, ir/ops.def).
inline void set_rules(Table& t, Primitive p, ShapeRule shape, CostRule cost) {
  t[static_cast<size_t>(p)].shape_rule = shape;
  t[static_cast<size_t>(p)].cost_rule = cost;
}


}  // namespace ferry::prims
