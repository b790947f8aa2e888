// Serial placeholder of the pool (issue 15 replaces it with a pool of threads): the contract of
// parallel.h holds with one thread.
#include "runtime/cpu/parallel.h"

namespace ferry::runtime::cpu {

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  (void)grain;
  if (n > 0) fn(0, n);
}

int num_threads() { return 1; }

}  // namespace ferry::runtime::cpu
