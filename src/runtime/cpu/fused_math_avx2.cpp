// fused_math.inc for processors with AVX2 (8 lanes); compiled with -mavx2 -ffp-contract=off and
// called only after fused_math.cpp has checked the processor.
#include "runtime/cpu/fused_math.h"

#include <cmath>
#include <limits>

#include "runtime/cpu/erf_inv.h"
#include "runtime/cpu/threefry_block.h"
#include "runtime/cpu/vector_math.h"

namespace ferry::runtime::cpu::fused_avx2 {
#include "runtime/cpu/fused_math.inc"
const FusedMath& math() { return kFusedMath; }
}  // namespace ferry::runtime::cpu::fused_avx2
