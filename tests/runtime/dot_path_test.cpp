// The dot_general path follows the processor's features: the widest path is the one GCC's own
// cpuid reading (__builtin_cpu_supports, independent of ferry's) says the processor has, oneDNN is
// capped there, and the kernels oneDNN chose for f32 and bf16 products use those instructions.
// Run once as is and once per path with FERRY_DOT_PATH (tests/CMakeLists.txt), so each forced path
// is checked to be the one that runs.
#include <gtest/gtest.h>
#include <oneapi/dnnl/dnnl.h>

#include <cctype>
#include <cstdlib>
#include <string>

#include "ferry/machine.h"
#include "runtime/cpu/cpu_features.h"
#include "runtime/cpu/dot_path.h"
#include "runtime/cpu/onednn_gemm.h"
#include "runtime/cpu/openblas.h"

namespace ferry::runtime::cpu {
namespace {

DotPath expected_widest() {
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (avx512 && __builtin_cpu_supports("avx512bf16")) {
    // AMX needs the OS's consent as well, which cpuid does not tell.
    if (__builtin_cpu_supports("amx-tile") && __builtin_cpu_supports("amx-bf16") && cpu_features().os_amx)
      return DotPath::amx;
    return DotPath::avx512_bf16;
  }
  if (avx512) return DotPath::avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return DotPath::avx2;
  return DotPath::sse41;
}

std::string implementation(DType t) {
  const PreparedGemm* g = prepare_gemm({.dtype = t, .m = 128, .n = 128, .k = 128, .lda = 128, .ldb = 128, .ldc = 128});
  return g ? gemm_implementation(*g) : "";
}

TEST(DotPath, TheWidestPathIsWhatCpuidOffers) {
  EXPECT_EQ(dot_path_name(widest_dot_path()), dot_path_name(expected_widest())) << cpu_features().isa_string();
  const auto paths = available_dot_paths();
  ASSERT_FALSE(paths.empty());
  EXPECT_EQ(paths.back(), DotPath::openblas);
  EXPECT_EQ(paths[paths.size() - 2], widest_dot_path());
}

TEST(DotPath, WithoutTheVariableTheWidestPathRuns) {
  if (std::getenv("FERRY_DOT_PATH") != nullptr) GTEST_SKIP() << "FERRY_DOT_PATH is set";
  EXPECT_EQ(chosen_dot_path(), widest_dot_path());
}

// The ISA oneDNN may use is the path's, and the kernels it picked for f32 and bf16 products say
// so in their names (e.g. "brg:avx512_core_bf16").
TEST(DotPath, OneDnnRunsTheChosenPath) {
  const DotPath path = chosen_dot_path();
  const std::string f32 = implementation(DType::f32), bf16 = implementation(DType::bf16);
  if (path == DotPath::openblas) {
    EXPECT_EQ(f32, "");
    EXPECT_EQ(bf16, "");
    return;
  }
  const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
  switch (path) {
    // Below AVX-512 oneDNN has only gemm-based kernels, which keep packing memory outside the
    // plan: OpenBLAS runs those products (prepare_gemm says none).
    case DotPath::sse41:
      EXPECT_EQ(isa, dnnl_cpu_isa_sse41);
      EXPECT_EQ(f32, "");
      EXPECT_EQ(bf16, "");
      break;
    case DotPath::avx2:
      EXPECT_EQ(isa, dnnl_cpu_isa_avx2);
      EXPECT_EQ(f32, "");
      EXPECT_EQ(bf16, "");
      break;
    case DotPath::avx512:
      EXPECT_TRUE(isa == dnnl_cpu_isa_avx512_core || isa == dnnl_cpu_isa_avx512_core_vnni) << isa;
      EXPECT_NE(f32.find("avx512_core"), std::string::npos) << f32;
      EXPECT_EQ(bf16, "") << "bf16 without the bf16 instructions is widened to f32";
      break;
    case DotPath::avx512_bf16:
      EXPECT_EQ(isa, dnnl_cpu_isa_avx512_core_bf16);
      EXPECT_NE(f32.find("avx512_core"), std::string::npos) << f32;
      EXPECT_NE(bf16.find("avx512_core_bf16"), std::string::npos) << bf16;
      break;
    case DotPath::amx:
      EXPECT_EQ(isa, dnnl_cpu_isa_avx512_core_amx);
      EXPECT_NE(bf16.find("amx"), std::string::npos) << bf16;
      break;
    case DotPath::openblas:
      break;
  }
}

// OpenBLAS runs with the core ferry chose from cpuid (this binary does not link OpenBLAS, so ferry
// loads it), unless FERRY_OPENBLAS_CORETYPE names another.
TEST(DotPath, OpenBlasRunsTheCoreCpuidCallsFor) {
  if (std::getenv("FERRY_OPENBLAS_CORETYPE") != nullptr) GTEST_SKIP() << "FERRY_OPENBLAS_CORETYPE is set";
  const std::string want = openblas_core_for(cpu_features(), chosen_dot_path());
  EXPECT_EQ(openblas().requested_core, want);
  std::string got = openblas_core().name, lower_want = want;
  for (char& ch : got) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (char& ch : lower_want) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  EXPECT_EQ(got, lower_want) << "OpenBLAS chose its own core";
  if (chosen_dot_path() != DotPath::sse41 && chosen_dot_path() != DotPath::avx2) EXPECT_EQ(openblas_core().shortfall, "");
}

TEST(DotPath, MachineInfoNamesThePathAndAnyLibraryBelowTheProcessor) {
  const MachineInfo m = machine_info();
  EXPECT_NE(m.dot_general.find(std::string("path ") + std::string(dot_path_name(chosen_dot_path()))), std::string::npos)
      << m.dot_general;
  EXPECT_NE(m.summary().find(m.isa), std::string::npos);
  const BlasCore blas = openblas_core();
  EXPECT_NE(m.dot_general.find(blas.name), std::string::npos) << m.dot_general;
  // OpenBLAS's core is below the processor exactly when its vectors are narrower; then it is said.
  const bool below = blas.lanes < dot_path_lanes(widest_dot_path());
  EXPECT_EQ(!blas.shortfall.empty(), below) << blas.name;
  const bool held = chosen_dot_path() != widest_dot_path() && chosen_dot_path() != DotPath::openblas;
  EXPECT_EQ(m.warnings.size(), (below ? 1u : 0u) + (held ? 1u : 0u));
}

}  // namespace
}  // namespace ferry::runtime::cpu
