// Which code dot_general runs on this processor. oneDNN (onednn_gemm.h) picks its matrix-product
// kernels by the cpuid features it finds, up to a cap; ferry sets that cap from its own reading of
// the features (cpu_features.h), so the choice never depends on a library knowing the model number.
//
// The paths, narrowest first; each names the widest instructions its products may use:
//   sse41        SSE4.1, 4 f32 lanes
//   avx2         AVX2 + FMA, 8 lanes
//   avx512       AVX-512 core (F BW VL DQ), 16 lanes; bf16 products widen to f32
//   avx512_bf16  AVX-512 with the bf16 dot-product instructions (vdpbf16ps) for bf16 products
//   amx          AMX tiles for bf16 products, where the OS enables them
//   openblas     no oneDNN: OpenBLAS sgemm (bf16 and f16 widened to f32)
// oneDNN runs the products where it has a brgemm kernel, which keeps all its memory in ferry's
// plan: f32 from avx512 up, bf16 from avx512_bf16 up. Below that (sse41, avx2, and f16 without
// AVX-512-FP16) products run OpenBLAS, loaded with the core type cpuid calls for (openblas.h), in
// f32 (half types widened).
// FERRY_DOT_PATH=<name> forces one (tests run the dot_general tests on every path the processor
// has); a path the processor lacks, or an unknown name, is INVALID_ARGUMENT at the first product.
// f64 products always run OpenBLAS dgemm (oneDNN has none), whose own choice is reported.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ferry::runtime::cpu {

enum class DotPath { sse41, avx2, avx512, avx512_bf16, amx, openblas };

std::string_view dot_path_name(DotPath p);
// The paths this processor can run, narrowest first (openblas last: it is not an ISA).
std::vector<DotPath> available_dot_paths();
// The widest ISA path the processor offers (from cpuid alone).
DotPath widest_dot_path();
// The path products run on: FERRY_DOT_PATH when set, else widest_dot_path(). Read once; it caps
// oneDNN's ISA before oneDNN does anything else.
DotPath chosen_dot_path();
// The f32 lanes of a path's vectors (openblas: those of the core OpenBLAS chose).
int dot_path_lanes(DotPath p);

// OpenBLAS as it configured itself: its core name ("Haswell", "SkylakeX", ...), its vector width
// in f32 lanes, and, where that is narrower than the widest path the processor offers, a sentence
// that says so (f64 products and the openblas path run on it).
struct BlasCore {
  std::string name;
  int lanes = 0;
  std::string shortfall;  // empty when OpenBLAS uses the widest vectors the processor has
};
BlasCore openblas_core();

// One line for `ferry info` and the demo's header, e.g. "dot_general: oneDNN 2.6.3, path
// avx512_bf16 (f32 brg:avx512_core, bf16 brg:avx512_core_bf16); f64: OpenBLAS Haswell (...)".
std::string dot_path_summary();

}  // namespace ferry::runtime::cpu
