// Data movement on the GPU: one strided-copy kernel (broadcast, transpose, slice, concatenate,
// dynamic_slice, dynamic_update_slice), gather, and scatter_add. The copy kernel is instantiated
// per element size (1, 2, 4, 8 bytes), not per dtype: moving bytes does not care what they mean.
#include "runtime/cuda/device.cuh"

namespace ferry::runtime::cuda {
namespace {

template <class E> __global__ void strided_copy_kernel(StridedCopy c, const E* src, E* dst, int64_t n) {
  // The dynamic starts move the whole window: computed once per thread.
  int64_t shift = 0;
  for (int d = 0; d < c.num_starts; ++d) {
    if (c.starts[d] == nullptr) continue;
    int64_t s = *c.starts[d];
    s = s < 0 ? 0 : s > c.start_max[d] ? c.start_max[d] : s;
    shift += s * c.start_stride[d];
  }
  const int64_t src_base = c.src_offset + (c.dynamic_on_src ? shift : 0);
  const int64_t dst_base = c.dst_offset + (c.dynamic_on_src ? 0 : shift);
  FERRY_GRID_LOOP(i, n) {
    int64_t rest = i, so = src_base, doff = dst_base;
    for (int d = c.rank - 1; d >= 0; --d) {
      const int64_t idx = rest % c.shape[d];
      rest /= c.shape[d];
      so += idx * c.src_stride[d];
      doff += idx * c.dst_stride[d];
    }
    dst[doff] = src[so];
  }
}

template <class E> __global__ void gather_kernel(GatherArgs g, const E* x, const int32_t* indices, E* out, int64_t n) {
  FERRY_GRID_LOOP(i, n) {
    // The output index: its batch part numbers the index vector, its offset part the window.
    int64_t out_idx[kMaxDims];
    int64_t rest = i;
    for (int d = g.out_rank - 1; d >= 0; --d) {
      out_idx[d] = rest % g.out_shape[d];
      rest /= g.out_shape[d];
    }
    int64_t batch = 0;
    for (int d = 0; d < g.out_rank; ++d)
      if (!g.out_is_offset[d]) batch = batch * g.out_shape[d] + out_idx[d];
    const int32_t* vec = indices + batch * g.num_index;
    int64_t start[kMaxDims];
    for (int d = 0; d < g.operand_rank; ++d) start[d] = 0;
    for (int k = 0; k < g.num_index; ++k) start[g.start_index_map[k]] = vec[k];
    bool inside = true;
    int64_t off = 0;
    for (int d = 0; d < g.operand_rank; ++d) {
      const int64_t hi = g.operand_shape[d] - g.slice_sizes[d];
      if (start[d] < 0 || start[d] > hi) {
        if (!g.clip) inside = false;
        start[d] = start[d] < 0 ? 0 : hi;
      }
      const int64_t w = g.window_out_dim[d] >= 0 ? out_idx[g.window_out_dim[d]] : 0;
      off = off * g.operand_shape[d] + start[d] + w;
    }
    if (inside) out[i] = x[off];
    else out[i] = *reinterpret_cast<const E*>(g.fill);
  }
}

template <class T> __device__ inline void atomic_add(T* p, T v) {
  if constexpr (std::is_same_v<T, int32_t>) {
    atomicAdd(reinterpret_cast<unsigned*>(p), static_cast<unsigned>(v));  // wraps, as the CPU's
  } else {
    atomicAdd(p, v);
  }
}

// Where update element i goes: the operand offset, and the position of its index vector (batch);
// false where its window is out of bounds and not clipped (the update is dropped).
__device__ inline bool update_target(const ScatterArgs& s, const int32_t* indices, int64_t i, int64_t& batch_out,
                                     int64_t& off_out) {
  {
    int64_t u_idx[kMaxDims];
    int64_t rest = i;
    for (int d = s.update_rank - 1; d >= 0; --d) {
      u_idx[d] = rest % s.update_shape[d];
      rest /= s.update_shape[d];
    }
    int64_t batch = 0;
    for (int d = 0; d < s.update_rank; ++d)
      if (!s.update_is_window[d]) batch = batch * s.update_shape[d] + u_idx[d];
    const int32_t* vec = indices + batch * s.num_index;
    int64_t start[kMaxDims];
    for (int d = 0; d < s.operand_rank; ++d) start[d] = 0;
    for (int k = 0; k < s.num_index; ++k) start[s.scatter_dims_to_operand_dims[k]] = vec[k];
    bool inside = true;
    int64_t off = 0;
    for (int d = 0; d < s.operand_rank; ++d) {
      const int64_t hi = s.operand_shape[d] - s.window[d];
      if (start[d] < 0 || start[d] > hi) {
        if (!s.clip) inside = false;
        start[d] = start[d] < 0 ? 0 : hi;
      }
      const int64_t w = s.window_update_dim[d] >= 0 ? u_idx[s.window_update_dim[d]] : 0;
      off = off * s.operand_shape[d] + start[d] + w;
    }
    batch_out = batch;
    off_out = off;
    return inside;
  }
}

template <class T> __global__ void scatter_add_kernel(ScatterArgs s, const T* updates, const int32_t* indices, T* out,
                                                      int64_t n) {
  FERRY_GRID_LOOP(i, n) {
    int64_t batch = 0, off = 0;
    if (update_target(s, indices, i, batch, off)) atomic_add(out + off, updates[i]);  // out of bounds: dropped
  }
}

// scatter (overwrite), in two passes so that of overlapping windows the last index vector's update
// stays, as on the CPU: each update element claims its operand element with its index vector's
// position (the largest claim wins), then only the winners write.
__global__ void scatter_claim_kernel(ScatterArgs s, const int32_t* indices, int32_t* last, int64_t n) {
  FERRY_GRID_LOOP(i, n) {
    int64_t batch = 0, off = 0;
    if (update_target(s, indices, i, batch, off)) atomicMax(last + off, static_cast<int32_t>(batch));
  }
}
template <class E> __global__ void scatter_write_kernel(ScatterArgs s, const E* updates, const int32_t* indices,
                                                        const int32_t* last, E* out, int64_t n) {
  FERRY_GRID_LOOP(i, n) {
    int64_t batch = 0, off = 0;
    if (update_target(s, indices, i, batch, off) && last[off] == static_cast<int32_t>(batch)) out[off] = updates[i];
  }
}

template <class F> void by_size(int bytes, F&& f) {
  switch (bytes) {
    case 1: return f(static_cast<uint8_t*>(nullptr));
    case 2: return f(static_cast<uint16_t*>(nullptr));
    case 4: return f(static_cast<uint32_t*>(nullptr));
    default: return f(static_cast<uint64_t*>(nullptr));
  }
}

}  // namespace

void launch_strided_copy(const StridedCopy& c, const void* src, void* dst, void* stream) {
  int64_t n = 1;
  for (int d = 0; d < c.rank; ++d) n *= c.shape[d];
  if (n == 0) return;
  by_size(c.elem_bytes, [&](auto* tag) {
    using E = std::remove_pointer_t<decltype(tag)>;
    strided_copy_kernel<E><<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        c, static_cast<const E*>(src), static_cast<E*>(dst), n);
  });
}

void launch_gather(const GatherArgs& g, const void* operand, const int32_t* indices, void* out, void* stream) {
  int64_t n = 1;
  for (int d = 0; d < g.out_rank; ++d) n *= g.out_shape[d];
  if (n == 0) return;
  by_size(g.elem_bytes, [&](auto* tag) {
    using E = std::remove_pointer_t<decltype(tag)>;
    gather_kernel<E><<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        g, static_cast<const E*>(operand), indices, static_cast<E*>(out), n);
  });
}

void launch_scatter_add(const ScatterArgs& s, const void* updates, const int32_t* indices, void* out, void* stream) {
  int64_t n = 1;
  for (int d = 0; d < s.update_rank; ++d) n *= s.update_shape[d];
  if (n == 0) return;
  auto st = static_cast<cudaStream_t>(stream);
  visit(s.dtype, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    if constexpr (!std::is_same_v<T, uint8_t>)  // bool has no scatter_add (the CPU refuses it too)
      scatter_add_kernel<T><<<blocks_for(n), kThreads, 0, st>>>(s, static_cast<const T*>(updates), indices,
                                                                static_cast<T*>(out), n);
  });
}

void launch_scatter(const ScatterArgs& s, const void* updates, const int32_t* indices, void* out, int32_t* last,
                    int64_t operand_elements, void* stream) {
  int64_t n = 1;
  for (int d = 0; d < s.update_rank; ++d) n *= s.update_shape[d];
  if (n == 0 || operand_elements == 0) return;
  auto st = static_cast<cudaStream_t>(stream);
  cudaMemsetAsync(last, 0xff, static_cast<size_t>(operand_elements) * sizeof(int32_t), st);  // -1: unclaimed
  scatter_claim_kernel<<<blocks_for(n), kThreads, 0, st>>>(s, indices, last, n);
  by_size(s.elem_bytes, [&](auto* tag) {
    using E = std::remove_pointer_t<decltype(tag)>;
    scatter_write_kernel<E><<<blocks_for(n), kThreads, 0, st>>>(s, static_cast<const E*>(updates), indices, last,
                                                                static_cast<E*>(out), n);
  });
}

}  // namespace ferry::runtime::cuda
