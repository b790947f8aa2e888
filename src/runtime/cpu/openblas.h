// OpenBLAS, loaded the first time a product needs it (f64, and f32 where no oneDNN kernel keeps
// its memory in the plan), with its core type chosen from the processor's features.
//
// OpenBLAS picks its kernels when it is loaded, by the model number for Intel processors: on a
// model newer than the library (Debian 12's 0.3.21 on Emerald Rapids) it falls back to Prescott's
// SSE3 code. ferry therefore does not link it; it sets OPENBLAS_CORETYPE from cpuid (the core
// whose kernels use the widest vectors the processor has: SkylakeX for AVX-512, Haswell for AVX2)
// while it loads it, so OpenBLAS's own initialization reads that choice, and then restores the
// variable as the process had it (a value set for numpy, say, is not ferry's). To run ferry's
// products on another core, set FERRY_OPENBLAS_CORETYPE. Where the process had loaded OpenBLAS
// already, that copy is used as it is, and openblas_core() in dot_path.h reports what it chose.
#pragma once

#include <string>

namespace ferry::runtime::cpu {

struct CpuFeatures;
enum class DotPath;

enum CblasOrder { kCblasRowMajor = 101 };
enum CblasTranspose { kCblasNoTrans = 111, kCblasTrans = 112 };

struct OpenBlas {
  void (*sgemm)(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                const float* b, int ldb, float beta, float* c, int ldc) = nullptr;
  void (*dgemm)(int order, int trans_a, int trans_b, int m, int n, int k, double alpha, const double* a, int lda,
                const double* b, int ldb, double beta, double* c, int ldc) = nullptr;
  char* (*corename)() = nullptr;
  void (*set_num_threads)(int) = nullptr;
  std::string requested_core;  // what ferry set OPENBLAS_CORETYPE to while loading it
};

// The loaded library, single-threaded (ferry's pool splits the products). INTERNAL where it cannot
// be loaded (the build found it, so the installation changed).
const OpenBlas& openblas();

// The OpenBLAS core whose kernels use the widest vectors these features offer, up to the path's.
std::string openblas_core_for(const CpuFeatures& f, DotPath path);

}  // namespace ferry::runtime::cpu
