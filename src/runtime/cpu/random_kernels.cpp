// threefry2x32: the Threefry-2x32 block cipher with 20 rounds, exactly as jax.random's
// threefry2x32 primitive computes it (on the uint32 bit patterns of i32 values). Keys may be
// rank-0 (read with stride 0).
#include <cstdint>

#include "runtime/cpu/check.h"
#include "runtime/cpu/kernel_groups.h"
#include "runtime/cpu/parallel.h"
#include "runtime/cpu/threefry_block.h"

namespace ferry::runtime::cpu {
namespace {

// Key words at strides S0, S1 (0: one word for all counters, 1: a word per counter).
template <int S0, int S1>
[[gnu::always_inline]] inline void encrypt(const uint32_t* k0, const uint32_t* k1, const uint32_t* x0, const uint32_t* x1,
                                           uint32_t* y0, uint32_t* y1, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t a = x0[i], b = x1[i];
    threefry_block(k0[i * S0], k1[i * S1], a, b);
    y0[i] = a;
    y1[i] = b;
  }
}

// The loops above for AVX2 (8 lanes of 32-bit words) and for the x86-64 baseline (4 lanes), chosen
// once by the processor (a plain check, not an ifunc: the sanitizer builds run these too).
// Integer arithmetic: both give the same bits.
#define FERRY_ENCRYPT_BODY                                       \
  if (s0 == 0 && s1 == 0) encrypt<0, 0>(k0, k1, x0, x1, y0, y1, n); \
  else if (s0 == 0) encrypt<0, 1>(k0, k1, x0, x1, y0, y1, n);        \
  else if (s1 == 0) encrypt<1, 0>(k0, k1, x0, x1, y0, y1, n);        \
  else encrypt<1, 1>(k0, k1, x0, x1, y0, y1, n);
[[gnu::target("avx2")]] void encrypt_avx2(const uint32_t* k0, const uint32_t* k1, int64_t s0, int64_t s1,
                                          const uint32_t* x0, const uint32_t* x1, uint32_t* y0, uint32_t* y1, int64_t n) {
  FERRY_ENCRYPT_BODY
}
void encrypt_baseline(const uint32_t* k0, const uint32_t* k1, int64_t s0, int64_t s1, const uint32_t* x0,
                      const uint32_t* x1, uint32_t* y0, uint32_t* y1, int64_t n) {
  FERRY_ENCRYPT_BODY
}
#undef FERRY_ENCRYPT_BODY

void encrypt_range(const uint32_t* k0, const uint32_t* k1, int64_t s0, int64_t s1, const uint32_t* x0,
                   const uint32_t* x1, uint32_t* y0, uint32_t* y1, int64_t n) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  (avx2 ? encrypt_avx2 : encrypt_baseline)(k0, k1, s0, s1, x0, x1, y0, y1, n);
}

}  // namespace

void threefry_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs,
                     Workspace&) {
  expect_arity(eq, inputs, outputs, 4, 2);
  const int64_t n = inputs[2].type->num_elements();
  for (const auto& in : inputs)
    if (in.type->dtype != DType::i32 || (in.type->num_elements() != n && in.type->rank() != 0))
      kernel_bug(eq, "operands must be i32 of the counts' size or rank-0");
  for (const auto& out : outputs)
    if (out.type->dtype != DType::i32 || out.type->num_elements() != n) kernel_bug(eq, "results must match the counts");
  const auto* k0 = inputs[0].as<uint32_t>();
  const auto* k1 = inputs[1].as<uint32_t>();
  const auto* x0 = inputs[2].as<uint32_t>();
  const auto* x1 = inputs[3].as<uint32_t>();
  auto* y0 = outputs[0].as<uint32_t>();
  auto* y1 = outputs[1].as<uint32_t>();
  const int64_t s0 = inputs[0].type->rank() == 0 ? 0 : 1, s1 = inputs[1].type->rank() == 0 ? 0 : 1;
  // Counters are independent: any split across the pool gives the same bits. One key for all
  // counters (random.h's case) makes a loop that vectorises.
  constexpr int64_t kGrain = 8192;  // ~20 us of rounds per task
  parallel_for(n, kGrain, [&](int64_t b, int64_t e) {
    encrypt_range(k0 + b * s0, k1 + b * s1, s0, s1, x0 + b, x1 + b, y0 + b, y1 + b, e - b);
  });
}

}  // namespace ferry::runtime::cpu
