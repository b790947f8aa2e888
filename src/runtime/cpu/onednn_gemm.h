// One single-threaded matrix product C = op(A) op(B) as oneDNN's matmul runs it, prepared once
// and then run without allocating ferry memory: C is [m, n] with row stride ldc; op(A) is [m, k]
// and op(B) [k, n], each stored row-major with its leading dimension, or transposed (stored
// [k, m] / [n, k]). Inputs are f32, bf16 or f16; C is the input type, accumulated in f32 and
// rounded once.
//
// Preparing (the first time a shape is seen, from the workspace declaration, i.e. at compile time)
// creates oneDNN's primitive for the shape and finds out the scratch memory it needs, which the
// kernel then takes from its planned workspace (oneDNN's user scratchpad mode): oneDNN holds no
// memory of its own while it runs. It does allocate a few hundred bytes of bookkeeping per call
// (its argument map), freed before the call returns (tests/heap bounds them).
//
// Threads: each call runs on the calling thread only. oneDNN's OpenMP threads are off for every
// thread that calls it (the dot kernel splits large products over ferry's pool instead), so the
// bits depend on the shapes and the path, never on the thread count.
#pragma once

#include <cstdint>
#include <string>

#include "ferry/types.h"

namespace ferry::runtime::cpu {

struct GemmShape {
  DType dtype = DType::f32;  // of A, B and C
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int64_t lda = 0, ldb = 0, ldc = 0;
  bool operator==(const GemmShape&) const = default;
};

class PreparedGemm;

// The prepared product, or nullptr where oneDNN has no kernel for it on this path that keeps its
// memory in the plan (only its brgemm kernels do: AVX-512 and up; see usable() in the .cpp), or
// the path is openblas: the caller then multiplies another way. Thread-safe; the result lives as
// long as the process.
const PreparedGemm* prepare_gemm(const GemmShape& shape);
// The scratch bytes one call needs (a piece of the kernel's workspace).
int64_t gemm_scratch_bytes(const PreparedGemm& g);
// The shape it was prepared for.
const GemmShape& gemm_shape(const PreparedGemm& g);
// oneDNN's name for the kernel it chose, e.g. "brg:avx512_core_bf16".
std::string gemm_implementation(const PreparedGemm& g);
// Runs it on the calling thread; `scratch` holds gemm_scratch_bytes(g) bytes, 64-byte aligned.
void run_gemm(const PreparedGemm& g, const void* a, const void* b, void* c, void* scratch);
// Makes the calling thread's OpenMP state (its team of one, which libgomp allocates on the first
// call), so that a thread of ferry's pool allocates it when it starts, not inside a run. Nothing
// of oneDNN's runs here: a pool thread may start while the process exits.
void prepare_kernel_thread();
// The products run_gemm has run in this process (tests/heap allows oneDNN's bookkeeping per product).
int64_t gemm_calls();

}  // namespace ferry::runtime::cpu
