// gather, scatter_add and scatter (XLA's, index vector in the last dimension of the indices). Each
// index vector picks one window: gather copies it (strided_copy), scatter_add adds the update into
// it, scatter writes the update over it (index vectors in order, so of overlapping windows the
// last one's update stays, as on XLA's CPU).
// An out-of-bounds start is clamped (mode clip) or, otherwise, fills the gathered window with the
// fill value / drops the update, so no index can move an access outside the buffers.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/cpu/check.h"
#include "runtime/cpu/dims.h"
#include "runtime/cpu/dtype_dispatch.h"
#include "runtime/cpu/kernel_groups.h"
#include "runtime/cpu/odometer.h"
#include "runtime/cpu/parallel.h"
#include "runtime/cpu/strided_copy.h"

namespace ferry::runtime::cpu {
namespace {

// Elements one task of a gather copies at least.
constexpr int64_t kGrainElements = 16384;

bool contains(const ir::Dims& d, int64_t v) { return std::find(d.begin(), d.end(), v) != d.end(); }

Dims64 strides_of(const Shape& shape) {
  Dims64 s(shape.size());
  dense_strides(shape, s);
  return s;
}

// The loop over the index vectors: each batch dimension with its stride in the windowed array
// (dst) and in the indices (src: K per index vector, row-major), so the odometer gives both offsets.
DimVec<LoopDim> batch_loop(const Dims64& shape, const Dims64& strides, int64_t K) {
  DimVec<LoopDim> dims;
  int64_t vectors = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    dims.push_back(LoopDim{shape[d], strides[d], vectors * K});
    vectors *= shape[d];
  }
  std::reverse(dims.begin(), dims.end());
  return dims;
}

// The operand start of one window: zeros, with the index vector's entries at their dimensions;
// clamped (clip) or reported out of bounds (false).
bool window_start(const int32_t* vec, const ir::Dims& index_map, const Shape& operand, const Dims64& window_size,
                  bool clip, Dims64& start) {
  for (size_t d = 0; d < start.size(); ++d) start[d] = 0;
  for (size_t k = 0; k < index_map.size(); ++k) start[static_cast<size_t>(index_map[k])] = vec[k];
  for (size_t d = 0; d < start.size(); ++d) {
    const int64_t hi = operand[d] - window_size[d];
    if (start[d] < 0 || start[d] > hi) {
      if (!clip) return false;
      start[d] = std::clamp<int64_t>(start[d], 0, hi);
    }
  }
  return true;
}

template <class T> void fill_value(DType t, int64_t mode, T* out) {
  if (mode == ir::kGatherFillZero) *out = store<T>(0);
  else if constexpr (std::is_same_v<T, bool>) *out = true;
  else if constexpr (std::is_same_v<T, int32_t>) *out = std::numeric_limits<int32_t>::min();
  else *out = store<T>(std::numeric_limits<float>::quiet_NaN());
  (void)t;
}

template <class T> void add_window(const Dims64& shape, T* dst, const Dims64& dst_strides, const T* src,
                                   const Dims64& src_strides) {
  DimVec<LoopDim> dims;
  for (size_t k = 0; k < shape.size(); ++k) dims.push_back(LoopDim{shape[k], dst_strides[k], src_strides[k]});
  odometer(dims, [&](int64_t d, int64_t s) {
    if constexpr (std::is_same_v<T, int32_t>)
      dst[d] = static_cast<int32_t>(static_cast<uint32_t>(dst[d]) + static_cast<uint32_t>(src[s]));
    else dst[d] = store<T>(load(dst[d]) + load(src[s]));
  });
}

}  // namespace

void gather_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                   Workspace&) {
  expect_arity(eq, inputs, outputs, 2);
  const auto& p = params_of<ir::GatherParams>(eq);
  const ir::Type &x = *inputs[0].type, &ix = *inputs[1].type, &out = *outputs[0].type;
  const size_t r = x.shape.size();
  if (ix.dtype != DType::i32 || ix.rank() < 1 || p.slice_sizes.size() != r || out.dtype != x.dtype ||
      ix.shape.back() != static_cast<int64_t>(p.start_index_map.size()))
    kernel_bug(eq, "operands do not match the dimension numbers");
  const Dims64 xs = strides_of(x.shape), os = strides_of(out.shape);
  // Window: operand dimensions not collapsed, each with its output offset dimension.
  Dims64 wshape, wdst, wsrc, slice(r);
  size_t k = 0;
  for (size_t d = 0; d < r; ++d) {
    slice[d] = p.slice_sizes[d];
    if (contains(p.collapsed_slice_dims, static_cast<int64_t>(d))) continue;
    if (k >= p.offset_dims.size()) kernel_bug(eq, "offset_dims do not match");
    const auto od = static_cast<size_t>(p.offset_dims[k++]);
    if (od >= out.shape.size() || out.shape[od] != slice[d]) kernel_bug(eq, "result shape does not match");
    wshape.push_back(slice[d]);
    wdst.push_back(os[od]);
    wsrc.push_back(xs[d]);
  }
  Dims64 bshape, bstrides;
  for (size_t d = 0; d < out.shape.size(); ++d)
    if (!contains(p.offset_dims, static_cast<int64_t>(d))) {
      bshape.push_back(out.shape[d]);
      bstrides.push_back(os[d]);
    }
  if (out.num_elements() == 0) return;
  const int64_t K = ix.shape.back();
  const int32_t* idx = inputs[1].as<int32_t>();
  const size_t es = dtype_size(x.dtype);
  char* y = outputs[0].as<char>();
  const char* src = inputs[0].as<char>();
  alignas(8) char fill[8];
  visit_dtype(x.dtype, [&]<class T>(TypeTag<T>) { fill_value<T>(x.dtype, p.mode, reinterpret_cast<T*>(fill)); });
  const Dims64 zeros(wshape.size(), 0);
  // Windows are disjoint parts of the result: split across the pool, each task at least
  // kGrainElements elements.
  int64_t window = 1;
  for (int64_t w : wshape) window *= w;
  const DimVec<LoopDim> loop = batch_loop(bshape, bstrides, K);
  parallel_for(loop_count(loop), std::max<int64_t>(1, kGrainElements / window), [&](int64_t begin, int64_t end) {
    Dims64 start(r);
    odometer(loop, begin, end, [&](int64_t out_off, int64_t idx_off) {
      char* dst = y + out_off * static_cast<int64_t>(es);
      if (!window_start(idx + idx_off, p.start_index_map, x.shape, slice, p.mode == ir::kGatherClip, start)) {
        strided_copy(es, wshape, dst, wdst, fill, zeros);
        return;
      }
      int64_t off = 0;
      for (size_t d = 0; d < r; ++d) off += start[d] * xs[d];
      strided_copy(es, wshape, dst, wdst, src + off * static_cast<int64_t>(es), wsrc);
    });
  });
}

namespace {

// scatter_add (add) or scatter (overwrite).
void scatter_into(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                  bool add) {
  expect_arity(eq, inputs, outputs, 3);
  const auto& p = params_of<ir::ScatterParams>(eq);
  const ir::Type &x = *inputs[0].type, &ix = *inputs[1].type, &u = *inputs[2].type, &out = *outputs[0].type;
  const size_t r = x.shape.size();
  if (ix.dtype != DType::i32 || ix.rank() < 1 || out != x || u.dtype != x.dtype ||
      ix.shape.back() != static_cast<int64_t>(p.scatter_dims_to_operand_dims.size()))
    kernel_bug(eq, "operands do not match the dimension numbers");
  if (out.num_elements() > 0 && outputs[0].data != inputs[0].data)
    std::memcpy(outputs[0].data, inputs[0].data, static_cast<size_t>(out.size_bytes()));
  const Dims64 xs = strides_of(x.shape), us = strides_of(u.shape);
  Dims64 wshape, wdst, wsrc, window(r, 1);
  size_t k = 0;
  for (size_t d = 0; d < r; ++d) {
    if (contains(p.inserted_window_dims, static_cast<int64_t>(d))) continue;
    if (k >= p.update_window_dims.size()) kernel_bug(eq, "update_window_dims do not match");
    const auto ud = static_cast<size_t>(p.update_window_dims[k++]);
    if (ud >= u.shape.size() || u.shape[ud] > x.shape[d]) kernel_bug(eq, "update window does not fit");
    window[d] = u.shape[ud];
    wshape.push_back(u.shape[ud]);
    wdst.push_back(xs[d]);
    wsrc.push_back(us[ud]);
  }
  Dims64 bshape, bstrides;
  for (size_t d = 0; d < u.shape.size(); ++d)
    if (!contains(p.update_window_dims, static_cast<int64_t>(d))) {
      bshape.push_back(u.shape[d]);
      bstrides.push_back(us[d]);
    }
  if (u.num_elements() == 0 || out.num_elements() == 0) return;
  const int64_t K = ix.shape.back();
  const int32_t* idx = inputs[1].as<int32_t>();
  Dims64 start(r);
  visit_dtype(x.dtype, [&]<class T>(TypeTag<T>) {
    if constexpr (std::is_same_v<T, bool>) {
      if (add) unsupported_dtype(eq, x.dtype);
    }
    T* y = outputs[0].as<T>();
    const T* upd = inputs[2].as<T>();
    // Serial: two index vectors may name overlapping windows, and the sums (or the writes, the last
    // of which stays) must come in order.
    odometer(batch_loop(bshape, bstrides, K), [&](int64_t u_off, int64_t idx_off) {
      if (!window_start(idx + idx_off, p.scatter_dims_to_operand_dims, x.shape, window, p.mode == ir::kGatherClip, start))
        return;  // dropped
      int64_t off = 0;
      for (size_t d = 0; d < r; ++d) off += start[d] * xs[d];
      if constexpr (!std::is_same_v<T, bool>)
        if (add) return add_window(wshape, y + off, wdst, upd + u_off, wsrc);
      strided_copy(sizeof(T), wshape, reinterpret_cast<char*>(y + off), wdst, reinterpret_cast<const char*>(upd + u_off), wsrc);
    });
  });
}

}  // namespace

void scatter_add_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                        Workspace&) {
  scatter_into(eq, inputs, outputs, /*add=*/true);
}

void scatter_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                    Workspace&) {
  scatter_into(eq, inputs, outputs, /*add=*/false);
}

}  // namespace ferry::runtime::cpu
