// One block of Threefry-2x32 with 20 rounds, exactly as jax.random's threefry2x32 computes it: the
// key words (ks0, ks1) encrypt the counter words (a, b) in place. Shared by the threefry2x32 kernel
// (random_kernels.cpp) and the fused kernel (fused_math.inc), whose loops call it per element.
// Always inlined: fused_math.inc is compiled for AVX2 and for the baseline, and an out-of-line
// copy built for one could be the one the linker keeps for both.
#pragma once

#include <cstdint>

namespace ferry::runtime::cpu {

[[gnu::always_inline]] inline uint32_t threefry_rotl(uint32_t x, int d) { return (x << d) | (x >> (32 - d)); }

// Four rounds; the rotations are template arguments so every shift is by a constant (vectorizes
// on the baseline too).
template <int R0, int R1, int R2, int R3> [[gnu::always_inline]] inline void threefry_rounds(uint32_t& a, uint32_t& b) {
  a += b, b = threefry_rotl(b, R0), b ^= a;
  a += b, b = threefry_rotl(b, R1), b ^= a;
  a += b, b = threefry_rotl(b, R2), b ^= a;
  a += b, b = threefry_rotl(b, R3), b ^= a;
}

[[gnu::always_inline]] inline void threefry_block(uint32_t ks0, uint32_t ks1, uint32_t& a, uint32_t& b) {
  const uint32_t ks2 = ks0 ^ ks1 ^ 0x1BD11BDAu;
  a += ks0, b += ks1;
  threefry_rounds<13, 15, 26, 6>(a, b);
  a += ks1, b += ks2 + 1u;
  threefry_rounds<17, 29, 16, 24>(a, b);
  a += ks2, b += ks0 + 2u;
  threefry_rounds<13, 15, 26, 6>(a, b);
  a += ks0, b += ks1 + 3u;
  threefry_rounds<17, 29, 16, 24>(a, b);
  a += ks1, b += ks2 + 4u;
  threefry_rounds<13, 15, 26, 6>(a, b);
  a += ks2, b += ks0 + 5u;
}

}  // namespace ferry::runtime::cpu
