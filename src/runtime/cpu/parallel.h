// Work splitting for the CPU kernels: one pool of threads for the process, sized to the machine and
// shared with OpenBLAS so that the two never oversubscribe the cores. Kernels call parallel_for;
// nothing else in ferry starts compute threads.
#pragma once

#include <cstdint>
#include <functional>

namespace ferry::runtime::cpu {

// Calls fn(begin, end) on disjoint ranges that cover [0, n), each at least `grain` long (except
// the last), possibly on several threads at once, and returns when every call has returned. Small
// n (below 2 * grain) runs on the calling thread. An exception thrown by fn is rethrown here.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& fn);

// Threads parallel_for may use (1 means it runs everything on the caller).
int num_threads();

}  // namespace ferry::runtime::cpu
