// dot_general on the GPU through cuBLAS: any dimension numbers become one strided-batched GEMM
// [batch, M, K] x [batch, K, N] -> [batch, M, N] (the output is already [batch..., lhs free...,
// rhs free...]). An operand already laid out that way, or with its two matrix parts swapped
// (which cuBLAS reads transposed), is read in place; any other operand is first copied into that
// layout in the kernel's workspace. f32, f16 and bf16 multiply with f32 accumulation (f16/bf16
// results rounded once), f64 in f64; TF32 is off unless FERRY_CUDA_TF32=1, since it changes f32
// results by ~1e-3 relative. cuBLAS's own scratch is part of the planned workspace too, so the
// plan counts every byte the GEMM touches. i32 has no cuBLAS GEMM with wrap-around: a plain kernel.
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <variant>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include "ferry/error.h"
#include "runtime/cuda/backend.h"
#include "runtime/cuda/kernels.h"
#include "runtime/cuda/launch.h"

namespace ferry::runtime::cuda {
namespace {

// cuBLAS's scratch per call: its documented recommendation for Hopper is 32 MiB; 4 MiB is what
// it asks for on earlier GPUs and is enough for the shapes here (the cost is planned memory).
constexpr int64_t kCublasWorkspace = int64_t{4} << 20;
constexpr int64_t kCublasAlignment = 256;

bool contains(const ir::Dims& d, int64_t v) {
  for (int64_t x : d)
    if (x == v) return true;
  return false;
}

// How an operand is read: `order` lists its dimensions as the GEMM wants them (batch, rows,
// columns); `direct` when its own layout is that, or (`transposed`) that with rows and columns
// swapped.
struct Operand {
  std::vector<int64_t> order;
  bool direct = false, transposed = false;
};

struct Gemm {
  int64_t batch = 1, M = 1, N = 1, K = 1;
  Operand lhs, rhs;
};

bool is_identity(const std::vector<int64_t>& order) {
  for (size_t i = 0; i < order.size(); ++i)
    if (order[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// `rows_first`: the normal layout has the free dimensions before the contracting ones (lhs) or
// after them (rhs).
Operand operand(const ir::Dims& batch, const ir::Dims& free, const ir::Dims& contracting, bool free_first, bool can_transpose) {
  Operand o;
  std::vector<int64_t> normal(batch.begin(), batch.end()), swapped(batch.begin(), batch.end());
  const ir::Dims& first = free_first ? free : contracting;
  const ir::Dims& second = free_first ? contracting : free;
  normal.insert(normal.end(), first.begin(), first.end());
  normal.insert(normal.end(), second.begin(), second.end());
  swapped.insert(swapped.end(), second.begin(), second.end());
  swapped.insert(swapped.end(), first.begin(), first.end());
  o.order = normal;
  if (is_identity(normal)) o.direct = true;
  else if (can_transpose && is_identity(swapped)) o.direct = true, o.transposed = true;
  return o;
}

Gemm analyse(const ir::Equation& eq, const ir::Type& lt, const ir::Type& rt, const ir::Type& ot) {
  const auto* params = std::get_if<ir::DotGeneralParams>(&eq.params);
  if (params == nullptr) kernel_bug(eq, "equation carries parameters of the wrong kind");
  const ir::DotDimensionNumbers& dn = params->dims;
  if (dn.lhs_batch.size() != dn.rhs_batch.size() || dn.lhs_contracting.size() != dn.rhs_contracting.size() ||
      lt.dtype != rt.dtype || lt.dtype != ot.dtype || lt.dtype == DType::boolean)
    kernel_bug(eq, "operands do not match the dimension numbers");
  auto in_range = [&](const ir::Dims& d, const ir::Type& t) {
    for (int64_t x : d)
      if (x < 0 || x >= t.rank()) kernel_bug(eq, "dimension number out of range");
  };
  in_range(dn.lhs_batch, lt), in_range(dn.lhs_contracting, lt), in_range(dn.rhs_batch, rt), in_range(dn.rhs_contracting, rt);
  Gemm g;
  Shape out_shape;
  for (size_t i = 0; i < dn.lhs_batch.size(); ++i) {
    const int64_t n = lt.shape[static_cast<size_t>(dn.lhs_batch[i])];
    if (n != rt.shape[static_cast<size_t>(dn.rhs_batch[i])]) kernel_bug(eq, "batch dimensions differ");
    g.batch *= n;
    out_shape.push_back(n);
  }
  for (size_t i = 0; i < dn.lhs_contracting.size(); ++i) {
    const int64_t n = lt.shape[static_cast<size_t>(dn.lhs_contracting[i])];
    if (n != rt.shape[static_cast<size_t>(dn.rhs_contracting[i])]) kernel_bug(eq, "contracting dimensions differ");
    g.K *= n;
  }
  ir::Dims lhs_free, rhs_free;
  for (int64_t d = 0; d < lt.rank(); ++d)
    if (!contains(dn.lhs_batch, d) && !contains(dn.lhs_contracting, d)) {
      lhs_free.push_back(d);
      g.M *= lt.shape[static_cast<size_t>(d)];
      out_shape.push_back(lt.shape[static_cast<size_t>(d)]);
    }
  for (int64_t d = 0; d < rt.rank(); ++d)
    if (!contains(dn.rhs_batch, d) && !contains(dn.rhs_contracting, d)) {
      rhs_free.push_back(d);
      g.N *= rt.shape[static_cast<size_t>(d)];
      out_shape.push_back(rt.shape[static_cast<size_t>(d)]);
    }
  if (out_shape != ot.shape) kernel_bug(eq, "result shape does not match the dimension numbers");
  const bool float_gemm = lt.dtype != DType::i32;  // the integer kernel reads the normal layout only
  g.lhs = operand(dn.lhs_batch, lhs_free, dn.lhs_contracting, /*free_first=*/true, float_gemm);
  g.rhs = operand(dn.rhs_batch, rhs_free, dn.rhs_contracting, /*free_first=*/false, float_gemm);
  return g;
}

bool needs_work(const Gemm& g) { return g.batch > 0 && g.M > 0 && g.N > 0 && g.K > 0; }

// Copies `x` into `dst` with its dimensions in `order` (dense).
void permute(const ir::Equation& eq, const void* x, const ir::Type& t, const std::vector<int64_t>& order, void* dst,
             Stream stream) {
  StridedCopy c;
  c.rank = static_cast<int>(order.size());
  c.elem_bytes = static_cast<int>(dtype_size(t.dtype));
  const auto strides = dense_strides(t.shape);
  Shape permuted;
  for (int64_t d : order) permuted.push_back(t.shape[static_cast<size_t>(d)]);
  const auto dst_strides = dense_strides(permuted);
  for (size_t i = 0; i < order.size(); ++i) {
    c.shape[i] = permuted[i];
    c.src_stride[i] = strides[static_cast<size_t>(order[i])];
    c.dst_stride[i] = dst_strides[i];
  }
  launch_strided_copy(c, x, dst, stream.handle);
  check_launch(eq);
}

bool tf32_allowed() {
  static const bool allowed = [] {
    const char* v = std::getenv("FERRY_CUDA_TF32");
    return v != nullptr && std::string_view(v) == "1";
  }();
  return allowed;
}

void check_cublas(cublasStatus_t status, const ir::Equation& eq) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(ErrorCode::internal, fmt::format("{} (CUDA kernel): cuBLAS failed: {}", primitive_name(eq.prim),
                                                 cublasGetStatusString(status)));
}

}  // namespace

int64_t dot_general_workspace(const ir::Equation& eq, std::span<const ir::Type* const> inputs,
                              std::span<const ir::Type* const> outputs) {
  if (inputs.size() != 2 || outputs.size() != 1) kernel_bug(eq, "expects two operands and one result");
  const Gemm g = analyse(eq, *inputs[0], *inputs[1], *outputs[0]);
  if (!needs_work(g)) return 0;
  WorkspaceSize size;
  if (!g.lhs.direct) size.add<char>(inputs[0]->size_bytes());
  if (!g.rhs.direct) size.add<char>(inputs[1]->size_bytes());
  if (inputs[0]->dtype != DType::i32) size.add<char>(kCublasWorkspace + kCublasAlignment);
  return size.bytes;
}

void dot_general_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                        Workspace& workspace, Stream stream) {
  if (inputs.size() != 2 || outputs.size() != 1) kernel_bug(eq, "expects two operands and one result");
  const ir::Type &lt = *inputs[0].type, &rt = *inputs[1].type, &ot = *outputs[0].type;
  const Gemm g = analyse(eq, lt, rt, ot);
  auto s = static_cast<cudaStream_t>(stream.handle);
  if (ot.num_elements() == 0) return;
  if (g.K == 0) {  // an empty sum: zeros
    check_cuda(cudaMemsetAsync(outputs[0].data, 0, static_cast<size_t>(ot.size_bytes()), s), "cudaMemsetAsync");
    return;
  }
  const void* lhs = inputs[0].data;
  const void* rhs = inputs[1].data;
  if (!g.lhs.direct) {
    void* p = workspace.take<char>(lt.size_bytes());
    permute(eq, lhs, lt, g.lhs.order, p, stream);
    lhs = p;
  }
  if (!g.rhs.direct) {
    void* p = workspace.take<char>(rt.size_bytes());
    permute(eq, rhs, rt, g.rhs.order, p, stream);
    rhs = p;
  }
  if (lt.dtype == DType::i32) {
    launch_int_matmul(static_cast<const int32_t*>(lhs), static_cast<const int32_t*>(rhs), outputs[0].as<int32_t>(),
                      g.batch, g.M, g.N, g.K, stream.handle);
    check_launch(eq);
    return;
  }
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  if (g.M > kIntMax || g.N > kIntMax || g.K > kIntMax || g.batch > kIntMax)
    throw Error(ErrorCode::unimplemented,
                fmt::format("dot_general on the CUDA backend: a GEMM of {} x {} x {} (batch {}) exceeds cuBLAS's 32-bit "
                            "sizes",
                            g.M, g.N, g.K, g.batch));
  // cuBLAS wants its scratch 256-byte aligned; workspace pieces are 64-byte aligned.
  char* piece = workspace.take<char>(kCublasWorkspace + kCublasAlignment);
  void* scratch = piece + (kCublasAlignment - reinterpret_cast<uintptr_t>(piece) % kCublasAlignment) % kCublasAlignment;
  auto handle = static_cast<cublasHandle_t>(cublas_handle());
  check_cublas(cublasSetStream(handle, s), eq);
  check_cublas(cublasSetWorkspace(handle, scratch, static_cast<size_t>(kCublasWorkspace)), eq);
  cudaDataType_t type = CUDA_R_32F;
  cublasComputeType_t compute = tf32_allowed() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  switch (lt.dtype) {
    case DType::f32: break;
    case DType::f16: type = CUDA_R_16F, compute = CUBLAS_COMPUTE_32F; break;
    case DType::bf16: type = CUDA_R_16BF, compute = CUBLAS_COMPUTE_32F; break;
    case DType::f64: type = CUDA_R_64F, compute = CUBLAS_COMPUTE_64F; break;
    default: kernel_bug(eq, "no GEMM for this dtype");
  }
  const float alpha32 = 1, beta32 = 0;
  const double alpha64 = 1, beta64 = 0;
  const void* alpha = lt.dtype == DType::f64 ? static_cast<const void*>(&alpha64) : &alpha32;
  const void* beta = lt.dtype == DType::f64 ? static_cast<const void*>(&beta64) : &beta32;
  // Row-major C[M,N] = A[M,K] B[K,N] is column-major C^T[N,M] = B^T[N,K] A^T[K,M]: cuBLAS gets the
  // rhs first. A row-major [K,N] rhs is column-major [N,K] = B^T as stored; a swapped one ([N,K]
  // row-major) is read transposed. Likewise the lhs.
  const int m = static_cast<int>(g.N), n = static_cast<int>(g.M), k = static_cast<int>(g.K);
  const cublasOperation_t op_r = g.rhs.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_l = g.lhs.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int ld_r = g.rhs.transposed ? k : m, ld_l = g.lhs.transposed ? n : k;
  check_cublas(cublasGemmStridedBatchedEx(handle, op_r, op_l, m, n, k, alpha, rhs, type, ld_r, g.K * g.N, lhs, type, ld_l,
                                          g.M * g.K, beta, outputs[0].data, type, m, g.M * g.N,
                                          static_cast<int>(g.batch), compute, CUBLAS_GEMM_DEFAULT),
               eq);
}

}  // namespace ferry::runtime::cuda
