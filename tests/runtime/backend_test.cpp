// The backend seam without a GPU: the registry, the CPU backend through it, and (in CUDA builds)
// the CUDA backend's kernel table and workspace declarations, which are plain host code.
#include <gtest/gtest.h>

#include <span>
#include <vector>

#include "ferry/error.h"
#include "prims/registry.h"
#include "runtime/backend.h"
#include "runtime/cpu/kernels.h"
#if FERRY_TEST_CUDA
#include "runtime/cuda/kernels.h"
#endif

namespace ferry::runtime {
namespace {

// Equations the executable runs itself (bodies, copies). A fused group has a body but is a kernel.
// What the executable runs itself (bodies, the halves of copies and collectives): the op table's
// HostOnly ones, which are also exactly those with bodies but the fused kernel, and the async halves.
bool runs_itself(Primitive p) {
  const bool by_role = (prims::info(p).body_shape_rule != nullptr && p != ir::op::fused) ||
                       ir::has(p, ir::kAsyncStart) || ir::has(p, ir::kAsyncDone);
  EXPECT_EQ(by_role, ir::has(p, ir::kHostOnly)) << primitive_name(p);
  return by_role;
}

TEST(Backend, TheCpuBackendIsTheCpuKernelTableThroughTheSeam) {
  Backend& cpu = backend("cpu");
  EXPECT_EQ(cpu.name(), "cpu");
  EXPECT_EQ(&cpu, &cpu_backend());
  for (int i = 0; i < ir::kNumOps; ++i) {
    const auto p = static_cast<Primitive>(i);
    EXPECT_EQ(cpu.kernel(p) == nullptr, runs_itself(p)) << primitive_name(p);
    EXPECT_EQ(cpu.workspace_size(p), cpu::workspace_size(p)) << primitive_name(p);
  }
  for (MemoryKind k : {MemoryKind::device, MemoryKind::pinned_host, MemoryKind::unpinned_host}) {
    EXPECT_EQ(cpu.memory(k).kind(), k);
    EXPECT_TRUE(cpu.memory(k).host_accessible());
  }
  EXPECT_EQ(cpu.facts().memory_bytes, 0) << "device memory is host RAM: no device size, no default limit";
}

TEST(Backend, CountsEveryResourcesBytesInTheProcessAndTheRunsTally) {
  Backend& cpu = backend("cpu");
  Tally tally;
  const int64_t before = resource_counters().live[static_cast<size_t>(MemoryKind::pinned_host)];
  void* p = cpu.memory(MemoryKind::pinned_host).allocate(1000, &tally);
  EXPECT_EQ(resource_counters().live[static_cast<size_t>(MemoryKind::pinned_host)], before + 1000);
  cpu.memory(MemoryKind::pinned_host).deallocate(p, 1000, &tally);
  EXPECT_EQ(tally.high_water[static_cast<size_t>(MemoryKind::pinned_host)], 1000);
  EXPECT_EQ(tally.live[static_cast<size_t>(MemoryKind::pinned_host)], 0);
}

TEST(Backend, AnUnknownBackendIsUnimplementedNamingTheBuiltOnes) {
  try {
    backend("tpu");
    FAIL() << "expected UNIMPLEMENTED";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unimplemented);
    EXPECT_NE(e.message().find("\"tpu\" is not available; this build has \"cpu\""), std::string::npos) << e.message();
  }
  std::string why;
  EXPECT_FALSE(backend_available("tpu", &why));
  EXPECT_NE(why.find("tpu"), std::string::npos);
  EXPECT_EQ(built_backends().front(), "cpu");
}

#if FERRY_TEST_CUDA
// Except fused: compile does not fuse for a backend without a fused kernel (compiler/compile.cpp).
TEST(CudaBackend, HasAKernelForEveryPrimitiveWithoutABody) {
  for (int i = 0; i < ir::kNumOps; ++i) {
    const auto p = static_cast<Primitive>(i);
    // Collectives have no CUDA kernel yet (NCCL is not built in): compiling one for the cuda backend
    // is UNIMPLEMENTED, naming it.
    EXPECT_EQ(cuda::kernel(p) == nullptr, runs_itself(p) || p == ir::op::fused || ir::has(p, ir::kCollective))
        << primitive_name(p);
  }
}

// dot_general reads an operand in place when it is [batch, rows, cols] or that with rows and
// columns swapped (cuBLAS transposes); any other layout is copied into the workspace first. Either
// way cuBLAS's scratch is declared, so the plan counts it.
TEST(CudaBackend, DotGeneralDeclaresALayoutCopyOnlyForOperandsCublasCannotRead) {
  auto workspace = [](ir::DotDimensionNumbers dn, const ir::Type& l, const ir::Type& r, const ir::Type& o) {
    ir::Equation eq;
    eq.prim = Primitive::dot_general;
    eq.params = ir::DotGeneralParams{dn};
    const std::vector<const ir::Type*> in{&l, &r}, out{&o};
    return cuda::workspace_size(Primitive::dot_general)(eq, std::span<const ir::Type* const>(in),
                                                        std::span<const ir::Type* const>(out));
  };
  const ir::Type a{DType::f32, {8, 4}}, b{DType::f32, {4, 6}}, bt{DType::f32, {6, 4}}, c{DType::f32, {8, 6}};
  const int64_t plain = workspace({{1}, {0}, {}, {}}, a, b, c);
  EXPECT_GT(plain, 0) << "cuBLAS's scratch";
  EXPECT_EQ(workspace({{1}, {1}, {}, {}}, a, bt, c), plain) << "a transposed rhs is read in place";
  // Batch dimensions that are not leading: both operands copied.
  const ir::Type lb{DType::f32, {8, 3, 4}}, rb{DType::f32, {4, 3, 6}}, ob{DType::f32, {3, 8, 6}};
  EXPECT_EQ(workspace({{2}, {0}, {1}, {1}}, lb, rb, ob), plain + Workspace::piece(lb.size_bytes()) + Workspace::piece(rb.size_bytes()));
  // i32 has no cuBLAS GEMM: no scratch, and nothing to copy when the layout is plain.
  const ir::Type ai{DType::i32, {8, 4}}, bi{DType::i32, {4, 6}}, ci{DType::i32, {8, 6}};
  EXPECT_EQ(workspace({{1}, {0}, {}, {}}, ai, bi, ci), 0);
  EXPECT_THROW(workspace({{1}, {0}, {}, {}}, a, b, ir::Type{DType::f32, {8, 5}}), Error) << "a result of the wrong shape";
}

TEST(CudaBackend, WithoutAGpuItSaysWhyAndCompileRefusesIt) {
  std::string why;
  if (backend_available("cuda", &why)) GTEST_SKIP() << "a GPU is present: this checks the machines without one";
  EXPECT_NE(why.find("GPU"), std::string::npos) << why;
  try {
    backend("cuda");
    FAIL() << "expected UNIMPLEMENTED";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unimplemented);
    EXPECT_NE(e.message().find("cannot run here"), std::string::npos) << e.message();
  }
}
#endif

}  // namespace
}  // namespace ferry::runtime
