// How dot_general reads an operand in place: as a batch of row-major matrices, possibly transposed
// (the BLAS flag), with one stride per group of dimensions. Shared by the CPU kernel (which packs an
// operand it cannot read so) and the fold_transposes pass (which only folds a transpose into a
// dot_general when the kernel can then read the transpose's operand in place).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>

#include "ir/type.h"

namespace ferry::prims {

// The matrix of one operand: `outer` are its rows as the gemm sees them (M for lhs, K for rhs),
// `inner` its columns, `batch` the batch dimensions; each group in its logical order. The batch
// dimensions keep their own strides (a head split [B, T, H, D] read as [B, H] x [T, D] is in place).
struct MatrixLayout {
  int batch_rank = 0;  // batch dimensions of more than one element, in the batch group's order
  std::array<int64_t, ir::kMaxRank> batch_sizes{}, batch_strides{};
  bool transposed = false;  // stored cols x rows
  int64_t ld = 0;           // leading dimension of the stored matrix

  // Element offset of matrix i (row-major over the batch dimensions).
  int64_t batch_offset(int64_t i) const {
    int64_t off = 0;
    for (int k = batch_rank; k-- > 0;) {
      off += i % batch_sizes[static_cast<size_t>(k)] * batch_strides[static_cast<size_t>(k)];
      i /= batch_sizes[static_cast<size_t>(k)];
    }
    return off;
  }
};

// The layout of a dense row-major array of `shape` seen so, or nullopt when the rows or the
// columns do not flatten to one stride or neither matrix stride is 1 (then the operand must be
// packed).
std::optional<MatrixLayout> matrix_layout(std::span<const int64_t> shape, std::span<const int64_t> batch,
                                          std::span<const int64_t> outer, std::span<const int64_t> inner);

}  // namespace ferry::prims
