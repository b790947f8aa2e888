// How dot_general reads an operand in place: as a batch of row-major matrices, possibly transposed
// (the BLAS flag), with one stride per group of dimensions. Shared by the CPU kernel (which packs an
// operand it cannot read so) and the fold_transposes pass (which only folds a transpose into a
// dot_general when the kernel can then read the transpose's operand in place).
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace ferry::prims {

// The matrix of one operand: `outer` are its rows as the gemm sees them (M for lhs, K for rhs),
// `inner` its columns, `batch` the batch dimensions; each group in its logical order.
struct MatrixLayout {
  int64_t batch_stride = 0;  // elements between consecutive matrices
  bool transposed = false;   // stored cols x rows
  int64_t ld = 0;            // leading dimension of the stored matrix
};

// The layout of a dense row-major array of `shape` seen so, or nullopt when some group does not
// flatten to one stride or neither matrix stride is 1 (then the operand must be packed).
std::optional<MatrixLayout> matrix_layout(std::span<const int64_t> shape, std::span<const int64_t> batch,
                                          std::span<const int64_t> outer, std::span<const int64_t> inner);

}  // namespace ferry::prims
