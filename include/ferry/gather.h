// Gather and scatter in the spirit of jax.lax, and the indexing built on them: take,
// take_along_axis and one_hot. Indices are i32. The index vector of gather and scatter_add is the
// last dimension of `indices` (as in jax.lax).
#pragma once

#include <cstdint>
#include <utility>

#include "ferry/tensor.h"

namespace ferry {

// jax.lax.GatherDimensionNumbers (without batching dimensions): the output's offset_dims index
// within each slice; the slice's dimensions in collapsed_slice_dims (size 1) are dropped;
// start_index_map[k] is the operand dimension that entry k of an index vector starts.
struct GatherDimensionNumbers {
  Axes offset_dims, collapsed_slice_dims, start_index_map;
};

// jax.lax.ScatterDimensionNumbers (without batching dimensions).
struct ScatterDimensionNumbers {
  Axes update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims;
};

// What an index out of bounds does (jax.lax.GatherScatterMode). clip: the start is clamped into
// range. fill_or_drop (the default, as in JAX): a gather gives fill values for that slice (NaN for
// floats, INT32_MIN for i32, true for bool), a scatter drops that update. fill_zero_or_drop: the
// same with 0 as the fill value.
enum class GatherScatterMode { clip, fill_or_drop, fill_zero_or_drop };

Tensor gather(const Tensor& operand, const Tensor& indices, const GatherDimensionNumbers& dims,
              const Shape& slice_sizes, GatherScatterMode mode = GatherScatterMode::fill_or_drop);
// operand with each update added at its window (repeated indices add up).
Tensor scatter_add(const Tensor& operand, const Tensor& indices, const Tensor& updates,
                   const ScatterDimensionNumbers& dims, GatherScatterMode mode = GatherScatterMode::fill_or_drop);
// jax.lax.scatter: operand with each update written over its window (x.at[i].set(v)); where
// windows overlap, the update of the last index vector stays, as on XLA's CPU. Its gradient goes to
// the operand where nothing was written and to each update where it stayed (JAX's rule).
Tensor scatter(const Tensor& operand, const Tensor& indices, const Tensor& updates, const ScatterDimensionNumbers& dims,
               GatherScatterMode mode = GatherScatterMode::fill_or_drop);

// jnp.take(x, indices, axis): the result's shape is x's with dimension `axis` replaced by the
// indices' shape. As in JAX, an index in [-n, 0) counts from the end except in clip mode (where it
// clips to 0); other indices outside [0, n) follow `mode`.
Tensor take(const Tensor& x, const Tensor& indices, int64_t axis = 0,
            GatherScatterMode mode = GatherScatterMode::fill_or_drop);
// jnp.take_along_axis: indices have x's rank and x's shape except along `axis`; negative indices
// as in take.
Tensor take_along_axis(const Tensor& x, const Tensor& indices, int64_t axis,
                       GatherScatterMode mode = GatherScatterMode::fill_or_drop);
// jnp.sort(x, axis, stable=True, descending=...): take_along_axis(x, argsort(x, axis, descending)),
// so the gradient goes back to each element's place.
Tensor sort(const Tensor& x, int64_t axis = -1, bool descending = false);
// jax.lax.top_k: the k largest elements along the last axis, largest first, and their i32
// positions; equal elements in their order (the lower position first). As in JAX, floats compare
// in IEEE's total order: NaN is the largest, -NaN the smallest, +0 above -0.
std::pair<Tensor, Tensor> top_k(const Tensor& x, int64_t k);
// jax.nn.one_hot: a new last dimension of `num_classes`; an index outside [0, num_classes) gives a
// row of zeros.
Tensor one_hot(const Tensor& indices, int64_t num_classes, DType dtype = DType::f32);

}  // namespace ferry
