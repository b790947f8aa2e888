// Private to the CPU kernels: inline, branch-free float16/bfloat16 <-> float conversions, bit-for-bit
// equal to the storage types' own (out-of-line) conversions in src/ir/types.cpp (round to nearest
// even, NaN kept quiet, overflow to infinity), so loops over half data vectorise. The tests compare
// them with the originals on every f16 value and many float bit patterns.
#pragma once

#include <bit>
#include <cstdint>

#include "ferry/types.h"

namespace ferry::runtime::cpu {

inline float half_to_float(float16 h) {
  const uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
  const uint32_t em = h.bits & 0x7fffu;
  const uint32_t normal = (em << 13) + ((127u - 15u) << 23);
  const uint32_t inf_nan = (em << 13) | 0x7f800000u;
  const uint32_t subnormal = std::bit_cast<uint32_t>(static_cast<float>(em) * 0x1p-24f);  // exact
  const uint32_t mag = em >= 0x7c00u ? inf_nan : em >= 0x0400u ? normal : subnormal;
  return std::bit_cast<float>(sign | mag);
}

// Round to nearest even through float arithmetic (a known exact trick: scaling pushes the bits to
// be discarded below float precision so the FPU's own rounding does the work).
inline float16 float_to_half(float f) {
  const uint32_t w = std::bit_cast<uint32_t>(f);
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xff000000u;
  bias = bias < 0x71000000u ? 0x71000000u : bias;
  float base = (std::bit_cast<float>(w & 0x7fffffffu) * 0x1p+112f) * 0x1p-110f;
  base = std::bit_cast<float>((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = std::bit_cast<uint32_t>(base);
  const uint32_t nonsign = ((bits >> 13) & 0x00007c00u) + (bits & 0x00000fffu);
  float16 h;
  h.bits = static_cast<uint16_t>((sign >> 16) | (shl1_w > 0xff000000u ? 0x7e00u : nonsign));
  return h;
}

inline float bf16_to_float(bfloat16 h) { return std::bit_cast<float>(static_cast<uint32_t>(h.bits) << 16); }

inline bfloat16 float_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (x >> 16) | 0x40u;
  bfloat16 h;
  h.bits = static_cast<uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
  return h;
}

}  // namespace ferry::runtime::cpu
