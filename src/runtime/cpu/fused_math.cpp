// fused_math.inc for x86-64's baseline, and the choice between it and the AVX2 build.
#include "runtime/cpu/fused_math.h"

#include <cmath>
#include <limits>

#include "runtime/cpu/erf_inv.h"
#include "runtime/cpu/threefry_block.h"
#include "runtime/cpu/vector_math.h"

#include <fmt/format.h>

#include "runtime/cpu/check.h"

namespace ferry::runtime::cpu {
namespace fused_avx2 {
const FusedMath& math();
}  // namespace fused_avx2
namespace fused_avx512 {
const FusedMath& math();
}  // namespace fused_avx512

namespace fused_baseline {
#include "runtime/cpu/fused_math.inc"
}  // namespace fused_baseline

void not_fused(const ir::Equation& eq, Primitive p, const char* kind) {
  kernel_bug(eq, fmt::format("{} is not a fused {} operation", primitive_name(p), kind));
}

const FusedMath& fused_math() {
  static const FusedMath& chosen =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
              __builtin_cpu_supports("avx512vl")
          ? fused_avx512::math()
      : __builtin_cpu_supports("avx2") ? fused_avx2::math()
                                       : fused_baseline::kFusedMath;
  return chosen;
}

}  // namespace ferry::runtime::cpu
