#include "prims/dot_layout.h"

#include <array>

#include "ir/type.h"

namespace ferry::prims {
namespace {

// The single stride of a group of dimensions of a dense array, when its index flattens to one
// (row-major over the group's order); size-1 dimensions do not matter. nullopt when it does not
// flatten; 0 when the group has one element (any stride serves).
std::optional<int64_t> group_stride(std::span<const int64_t> shape, std::span<const int64_t> strides,
                                    std::span<const int64_t> dims) {
  std::optional<int64_t> inner;  // stride of the innermost non-trivial dimension so far
  int64_t span = 1;              // elements the dimensions to the right cover
  for (size_t k = dims.size(); k-- > 0;) {
    const auto d = static_cast<size_t>(dims[k]);
    if (shape[d] == 1) continue;
    if (!inner) inner = strides[d];
    else if (strides[d] != *inner * span) return std::nullopt;
    span *= shape[d];
  }
  return inner ? *inner : 0;
}

int64_t product(std::span<const int64_t> shape, std::span<const int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= shape[static_cast<size_t>(d)];
  return p;
}

}  // namespace

std::optional<MatrixLayout> matrix_layout(std::span<const int64_t> shape, std::span<const int64_t> batch,
                                          std::span<const int64_t> outer, std::span<const int64_t> inner) {
  // On the stack: the CPU kernel calls this on every run, and kernels allocate nothing.
  if (shape.size() > static_cast<size_t>(ir::kMaxRank)) return std::nullopt;
  std::array<int64_t, ir::kMaxRank> strides{};
  int64_t s = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = s;
    s *= shape[d];
  }
  const int64_t rows = product(shape, outer), cols = product(shape, inner);
  const std::span<const int64_t> st(strides.data(), shape.size());
  auto so = group_stride(shape, st, outer);
  auto si = group_stride(shape, st, inner);
  if (!so || !si) return std::nullopt;
  MatrixLayout m;
  for (int64_t d : batch)
    if (shape[static_cast<size_t>(d)] != 1) {
      m.batch_sizes[static_cast<size_t>(m.batch_rank)] = shape[static_cast<size_t>(d)];
      m.batch_strides[static_cast<size_t>(m.batch_rank)] = strides[static_cast<size_t>(d)];
      ++m.batch_rank;
    }
  // Stride 0 marks a one-element group, whose stride does not matter.
  const int64_t o = *so, i = *si;
  auto with = [&](bool transposed, int64_t ld) {
    m.transposed = transposed;
    m.ld = ld;
    return m;
  };
  if (i == 0 && o == 0) return with(false, 1);
  if (i == 0) return with(false, o);  // one column
  if (o == 0) return i == 1 ? with(false, cols) : with(true, i);  // one row
  if (i == 1 && o >= cols) return with(false, o);
  if (o == 1 && i >= rows) return with(true, i);
  return std::nullopt;
}

}  // namespace ferry::prims
