// The kernels' inline f16/bf16 conversions equal the storage types' own conversions bit for bit.
#include <bit>

#include "runtime/cpu/half_convert.h"
#include "runtime/kernel_test_util.h"

namespace ferry::kernel_test {
namespace {

using runtime::cpu::bf16_to_float;
using runtime::cpu::float_to_bf16;
using runtime::cpu::float_to_half;
using runtime::cpu::half_to_float;

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

TEST(HalfConvert, EveryHalfValueWidensExactly) {
  for (uint32_t b = 0; b <= 0xffffu; ++b) {
    float16 h;
    h.bits = static_cast<uint16_t>(b);
    bfloat16 g;
    g.bits = static_cast<uint16_t>(b);
    ASSERT_EQ(bits(half_to_float(h)), bits(static_cast<float>(h))) << std::hex << b;
    ASSERT_EQ(bits(bf16_to_float(g)), bits(static_cast<float>(g))) << std::hex << b;
  }
}

void expect_narrows_like_library(uint32_t w) {
  const float f = std::bit_cast<float>(w);
  ASSERT_EQ(float_to_half(f).bits, float16(f).bits) << std::hex << w;
  ASSERT_EQ(float_to_bf16(f).bits, bfloat16(f).bits) << std::hex << w;
}

TEST(HalfConvert, NarrowingMatchesTheStorageTypes) {
  // Every float within a few ulps of each f16 value, its midpoints and the range boundaries, both
  // signs; then random bit patterns.
  for (uint32_t b = 0; b <= 0x7fffu; ++b) {
    float16 h;
    h.bits = static_cast<uint16_t>(b);
    const uint32_t c = bits(half_to_float(h));
    for (uint32_t d = 0; d < 8; ++d)
      for (uint32_t s : {0u, 0x80000000u}) {
        expect_narrows_like_library(s | (c + d));
        expect_narrows_like_library(s | (c - d));
        expect_narrows_like_library(s | (c + 0x1000u + d - 4));  // near the midpoint to the next f16
      }
  }
  std::mt19937 g(99);
  for (int i = 0; i < 1 << 20; ++i) expect_narrows_like_library(static_cast<uint32_t>(g()));
  for (uint32_t w : {0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u, 0xffffffffu, 0x477ff000u, 0x477fefffu,
                     0x33000000u, 0x33000001u, 0x387fe000u, 0x7f7fffffu, 0x00000001u})
    expect_narrows_like_library(w);
}

}  // namespace
}  // namespace ferry::kernel_test
