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
#include "ferry/jit.h"
#include "runtime/cuda/kernels.h"
#include "runtime/cuda/nccl_comm.h"
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
    // The collectives that exchange data are NCCL's, where the build has it: without it compiling
    // one for the cuda backend is UNIMPLEMENTED, saying so (axis_index needs no exchange).
    const bool exchanges = ir::has(p, ir::kCollective) && p != Primitive::axis_index;
    EXPECT_EQ(cuda::kernel(p) == nullptr, runs_itself(p) || p == ir::op::fused || (exchanges && !FERRY_TEST_NCCL))
        << primitive_name(p);
  }
}

// NCCL's exchanges are made without touching the GPU (the communicator waits for the first
// exchange); a build without NCCL says what was missing. The rearrangement where the exchanged
// dimension is not the outermost one takes the same workspace as on the CPU.
TEST(CudaBackend, CollectivesAreNcclsWhereTheBuildHasIt) {
  std::string why;
  const Exchanges* exchanges = cuda::nccl_exchanges(&why);
  if (FERRY_TEST_NCCL) {
    EXPECT_NE(exchanges, nullptr);
  } else {
    EXPECT_EQ(exchanges, nullptr);
    EXPECT_NE(why.find("built without NCCL"), std::string::npos) << why;
  }
  for (Primitive p : {Primitive::all_gather, Primitive::psum_scatter})
    EXPECT_EQ(cuda::workspace_size(p), cpu::workspace_size(p)) << primitive_name(p);
}

// Each collective for the cuda backend, in both forms the compiler gives them: asynchronous pairs
// (psum; all_gather and psum_scatter of the outermost dimension) and kernels that rearrange
// through a workspace (the others). Compiling needs the GPU (its free memory is the default limit).
TEST(CudaBackend, CompilesEveryCollectiveWhereNcclIsBuilt) {
  std::string why;
  if (!backend_available("cuda", &why)) GTEST_SKIP() << "the cuda backend cannot run here: " << why;
  const Lowered lowered = parse_program(
      "program @main(%0: f32[4,3], %1: f32[1,6], %2: bf16[2,2,3]) {\n"
      "  %3 = psum[axis_size=2] %0 : f32[4,3]\n"
      "  %4 = all_gather[axis_size=2, dimension=0, tiled=true] %0 : f32[8,3]\n"
      "  %5 = all_gather[axis_size=2, dimension=1, tiled=false] %0 : f32[4,2,3]\n"
      "  %6 = psum_scatter[axis_size=2, dimension=1, tiled=true] %1 : f32[1,3]\n"
      "  %7 = psum_scatter[axis_size=2, dimension=1, tiled=false] %2 : bf16[2,3]\n"
      "  %8 = axis_index[axis_size=2] : i32[]\n"
      "  return %3, %4, %5, %6, %7, %8\n"
      "}\n");
  CompileOptions options;
  options.backend = "cuda";
  if (FERRY_TEST_NCCL) {
    EXPECT_NO_THROW(lowered.compile(options));
    return;
  }
  try {
    lowered.compile(options);
    FAIL() << "expected UNIMPLEMENTED";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unimplemented);
    EXPECT_NE(e.message().find("the cuda backend has no kernel for "), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("built without NCCL"), std::string::npos) << e.message();
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
