// The CUDA backend's collectives: psum, all_gather and psum_scatter are NCCL's exchanges
// (nccl_comm.h), started after the compute stream's work before them and waited for by its work
// after them, like any kernel; where the exchanged dimension is not the outermost one the
// strided-copy kernel rearranges the data through the workspace (runtime/collective_layout.h).
// axis_index writes this process's index, and needs no exchange.
#include <string>
#include <variant>

#include "ir/type.h"
#include "runtime/collective_layout.h"
#include "runtime/cuda/kernels.h"
#include "runtime/cuda/launch.h"
#include "runtime/cuda/nccl_comm.h"
#include "runtime/process_group.h"

namespace ferry::runtime::cuda {
namespace {

using Kind = Exchanges::Kind;

void expect_one_each(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs) {
  if (inputs.size() != 1 || outputs.size() != 1) kernel_bug(eq, "expects one operand and one result");
  if (inputs[0].type->dtype != outputs[0].type->dtype) kernel_bug(eq, "operand and result dtypes differ");
}

const ir::CollectiveDimParams& dim_params(const ir::Equation& eq) {
  if (const auto* p = std::get_if<ir::CollectiveDimParams>(&eq.params)) return *p;
  kernel_bug(eq, "equation carries parameters of the wrong kind");
}

// One exchange in the compute stream's order: started, and the stream's later work made to wait
// for it.
void exchange(const ir::Equation& eq, Kind kind, const void* x, void* y, int64_t count, DType dtype, Stream stream) {
  std::string why;
  Exchanges* e = nccl_exchanges(&why);
  if (e == nullptr) kernel_bug(eq, why);  // kernel() gives these kernels only where NCCL is built
  const char* what = kind == Kind::all_reduce_sum ? "psum" : kind == Kind::all_gather ? "all_gather" : "psum_scatter";
  e->wait(e->start(kind, x, y, count, dtype, what, stream), stream);
}

// dst[i, j, k] = src[i * src_i + j * src_j + k] over dense dst [a, b, c], in elements of `bytes`.
void rearrange(const ir::Equation& eq, const void* src, void* dst, const int64_t (&shape)[3], int64_t src_i,
               int64_t src_j, size_t bytes, Stream stream) {
  StridedCopy c;
  c.rank = 3;
  c.elem_bytes = static_cast<int>(bytes);
  for (int d = 0; d < 3; ++d) c.shape[d] = shape[d];
  c.src_stride[0] = src_i, c.src_stride[1] = src_j, c.src_stride[2] = 1;
  c.dst_stride[0] = shape[1] * shape[2], c.dst_stride[1] = shape[2], c.dst_stride[2] = 1;
  launch_strided_copy(c, src, dst, stream.handle);
  check_launch(eq);
}

void psum_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                 Workspace&, Stream stream) {
  expect_one_each(eq, inputs, outputs);
  const ir::Type& x = *inputs[0].type;
  if (x.num_elements() != outputs[0].type->num_elements()) kernel_bug(eq, "operand and result differ in size");
  exchange(eq, Kind::all_reduce_sum, inputs[0].data, outputs[0].data, x.num_elements(), x.dtype, stream);
}

// x = [outer, rest] from each of n processes: gathered [n, outer, rest], written [outer, n, rest].
void all_gather_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                       Workspace& workspace, Stream stream) {
  expect_one_each(eq, inputs, outputs);
  const ir::CollectiveDimParams& p = dim_params(eq);
  const ir::Type& x = *inputs[0].type;
  const int64_t outer = outer_of(x, p.dimension), n = p.axis_size, count = x.num_elements();
  if (outputs[0].type->num_elements() != count * n) kernel_bug(eq, "result is not axis_size operands");
  if (outer == 1) return exchange(eq, Kind::all_gather, inputs[0].data, outputs[0].data, count, x.dtype, stream);
  char* gathered = workspace.take<char>(x.size_bytes() * n);
  exchange(eq, Kind::all_gather, inputs[0].data, gathered, count, x.dtype, stream);
  const int64_t rest = count / outer;
  rearrange(eq, gathered, outputs[0].data, {outer, n, rest}, rest, outer * rest, dtype_size(x.dtype), stream);
}

// x = [outer, n, part]: sent as [n, outer, part], of which this process keeps block index().
void psum_scatter_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                         Workspace& workspace, Stream stream) {
  expect_one_each(eq, inputs, outputs);
  const ir::CollectiveDimParams& p = dim_params(eq);
  const ir::Type &x = *inputs[0].type, &y = *outputs[0].type;
  const int64_t outer = outer_of(x, p.dimension), n = p.axis_size;
  if (y.num_elements() * n != x.num_elements()) kernel_bug(eq, "result is not one axis_size-th of the operand");
  if (outer == 1)
    return exchange(eq, Kind::reduce_scatter_sum, inputs[0].data, outputs[0].data, y.num_elements(), x.dtype, stream);
  char* send = workspace.take<char>(x.size_bytes());
  const int64_t part = y.num_elements() / outer;
  rearrange(eq, inputs[0].data, send, {n, outer, part}, part, n * part, dtype_size(x.dtype), stream);
  exchange(eq, Kind::reduce_scatter_sum, send, outputs[0].data, y.num_elements(), x.dtype, stream);
}

void axis_index_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                       Workspace&, Stream stream) {
  if (!inputs.empty() || outputs.size() != 1 || outputs[0].type->dtype != DType::i32 ||
      outputs[0].type->num_elements() != 1)
    kernel_bug(eq, "expects no operand and one i32 scalar result");
  launch_fill(Dt::i32, processes::index(), outputs[0].data, 1, stream.handle);
  check_launch(eq);
}

}  // namespace

KernelFn collective_kernel(Primitive p) {
  if (p == Primitive::axis_index) return axis_index_kernel;
  if (nccl_exchanges(nullptr) == nullptr) return nullptr;  // compile says why (Backend::exchanges)
  switch (p) {
    case Primitive::psum: return psum_kernel;
    case Primitive::all_gather: return all_gather_kernel;
    case Primitive::psum_scatter: return psum_scatter_kernel;
    default: return nullptr;
  }
}

}  // namespace ferry::runtime::cuda
