// fused_math.inc for processors with AVX-512 (16 lanes); compiled with -mavx512f -mavx512dq -mavx512bw -mavx512vl -ffp-contract=off and
// called only after fused_math.cpp has checked the processor.
#include "runtime/cpu/fused_math.h"

#include <cmath>
#include <limits>

#include "runtime/cpu/erf_inv.h"
#include "runtime/cpu/threefry_block.h"
#include "runtime/cpu/vector_math.h"

namespace ferry::runtime::cpu::fused_avx512 {
#include "runtime/cpu/fused_math.inc"
const FusedMath& math() { return kFusedMath; }
}  // namespace ferry::runtime::cpu::fused_avx512
