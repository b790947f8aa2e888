// Typed parameters of equations: one struct per primitive family. The registry says which struct a
// primitive takes; printer and parser handle every struct through one attribute list.
#pragma once

#include <cstdint>
#include <variant>
#include <vector>

#include "ferry/types.h"

namespace ferry::ir {

using Dims = std::vector<int64_t>;

struct NoParams {
  bool operator==(const NoParams&) const = default;
};

struct ConvertParams {
  DType new_dtype = DType::f32;
  bool operator==(const ConvertParams&) const = default;
};

// iota: values 0, 1, ... along `dimension` of `shape`, broadcast along the others.
struct IotaParams {
  DType dtype = DType::i32;
  Shape shape;
  int64_t dimension = 0;
  bool operator==(const IotaParams&) const = default;
};

// constant: `shape` filled with `value` (a splat); literals of traced code.
struct ConstantParams {
  double value = 0;
  DType dtype = DType::f32;
  Shape shape;
  bool operator==(const ConstantParams&) const = default;
};

// Operand dimension i becomes output dimension broadcast_dimensions[i] (as in XLA).
struct BroadcastInDimParams {
  Shape shape;
  Dims broadcast_dimensions;
  bool operator==(const BroadcastInDimParams&) const = default;
};

struct ReshapeParams {
  Shape new_sizes;
  bool operator==(const ReshapeParams&) const = default;
};

// Output dimension i is operand dimension permutation[i].
struct TransposeParams {
  Dims permutation;
  bool operator==(const TransposeParams&) const = default;
};

struct ReduceParams {
  Dims axes;
  bool operator==(const ReduceParams&) const = default;
};

// As in XLA: the output is [batch..., lhs free..., rhs free...].
struct DotDimensionNumbers {
  Dims lhs_contracting, rhs_contracting, lhs_batch, rhs_batch;
  bool operator==(const DotDimensionNumbers&) const = default;
};
struct DotGeneralParams {
  DotDimensionNumbers dims;
  bool operator==(const DotGeneralParams&) const = default;
};

struct SliceParams {
  Dims start_indices, limit_indices, strides;
  bool operator==(const SliceParams&) const = default;
};

// dynamic_slice(operand, start_0, ..., start_{r-1}); starts are clamped so the slice stays inside.
struct DynamicSliceParams {
  Shape slice_sizes;
  bool operator==(const DynamicSliceParams&) const = default;
};

struct ConcatenateParams {
  int64_t dimension = 0;
  bool operator==(const ConcatenateParams&) const = default;
};

// argmax, argmin: the axis reduced (the result drops it); the index is i32.
struct ArgReduceParams {
  int64_t axis = 0;
  bool operator==(const ArgReduceParams&) const = default;
};

// cumsum, cummax, cummin along `axis`; with `reverse` from the last element to the first.
struct CumulativeParams {
  int64_t axis = 0;
  bool reverse = false;
  bool operator==(const CumulativeParams&) const = default;
};

// argsort along `axis`: the i32 positions that order each line as jax.lax.sort orders them
// (-inf < ... < -0 = +0 < ... < inf < NaN, every NaN equal; false < true), ascending or
// `descending`; equal elements keep their order (stable) either way. With `total_order`, floats
// compare in IEEE's total order instead, as jax.lax.top_k compares them (-NaN < -inf < ... < -0 <
// +0 < ... < inf < NaN).
struct SortParams {
  int64_t axis = 0;
  bool descending = false;
  bool total_order = false;
  bool operator==(const SortParams&) const = default;
};

// gather(operand, indices) as XLA's with the index vector in the last dimension of `indices`
// (jax.lax.GatherDimensionNumbers without batching dimensions). Output dimensions listed in
// offset_dims index the slice; the others are the batch dimensions of indices. `mode` says what an
// out-of-bounds start does: kGatherClip clamps it into range; kGatherFill gives a slice of fill
// values (NaN for floats, INT32_MIN for i32, true for bool: jax.lax's defaults); kGatherFillZero a
// slice of zeros (the transpose of a scatter that drops).
inline constexpr int64_t kGatherClip = 0, kGatherFill = 1, kGatherFillZero = 2;
struct GatherParams {
  Dims offset_dims, collapsed_slice_dims, start_index_map;
  Shape slice_sizes;
  int64_t mode = kGatherFill;
  bool operator==(const GatherParams&) const = default;
};

// scatter_add(operand, indices, updates), XLA's scatter with add as the combiner and the index
// vector in the last dimension of `indices`; scatter(...) the same, each update written over its
// window (of overlapping windows, the last index vector's stays). `mode`: kGatherClip clamps an out-of-bounds start
// into range; any other mode drops that window's updates (jax.lax's FILL_OR_DROP).
struct ScatterParams {
  Dims update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims;
  int64_t mode = kGatherFill;
  bool operator==(const ScatterParams&) const = default;
};

struct DevicePutParams {
  MemoryKind dst = MemoryKind::device;
  bool operator==(const DevicePutParams&) const = default;
};

// scan(carry..., xs..., consts...) with body(carry..., x slices..., consts...) -> (carry..., y...);
// outputs are the final carry and the ys stacked along a new leading axis of size `length`. With
// `reverse` the steps run from index length-1 down to 0 (ys[i] still belongs to xs[i]).
struct ScanParams {
  int64_t length = 0;
  bool reverse = false;
  int64_t num_carry = 0;
  int64_t num_xs = 0;
  bool operator==(const ScanParams&) const = default;
};

// checkpoint(inputs...) with body(inputs...) -> outputs: computes the body. Differentiating it
// applies the decisions its policy recorded on the body's equations; the equation's name is the
// policy's name. prevent_cse keeps recomputed equations apart from their forward twins.
struct CheckpointParams {
  bool prevent_cse = true;
  bool operator==(const CheckpointParams&) const = default;
};

// Collectives over the axis of all processes (ferry/distributed.h): psum, axis_index. The axis's size
// is part of the program (shapes depend on it, and processes that disagree on it compiled
// different programs).
struct CollectiveParams {
  int64_t axis_size = 1;
  bool operator==(const CollectiveParams&) const = default;
};

// all_gather (the processes' operands stacked along a new `dimension`, or concatenated along it
// when `tiled`) and psum_scatter (the sum split along `dimension`: that dimension's size is the
// axis size and goes, or with `tiled` is divided by it), as jax.lax defines them.
struct CollectiveDimParams {
  int64_t axis_size = 1;
  int64_t dimension = 0;
  bool tiled = false;
  bool operator==(const CollectiveDimParams&) const = default;
};

using Params = std::variant<NoParams, ConvertParams, IotaParams, ConstantParams, BroadcastInDimParams,
                            ReshapeParams, TransposeParams, ReduceParams, DotGeneralParams, SliceParams,
                            DynamicSliceParams, ConcatenateParams, DevicePutParams, ScanParams, CheckpointParams,
                            ArgReduceParams, CumulativeParams, SortParams, GatherParams, ScatterParams, CollectiveParams,
                            CollectiveDimParams>;

}  // namespace ferry::ir
