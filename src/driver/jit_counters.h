// Counting traces and compiles for jit_counters() (ferry/jit_cache.h).
#pragma once

namespace ferry::detail {
void count_trace();
void count_compile();
}  // namespace ferry::detail
