// Work splitting for the CPU kernels: one pool of threads for the process, sized to the machine and
// shared with OpenBLAS so that the two never oversubscribe the cores. Kernels call parallel_for;
// nothing else in ferry starts compute threads.
//
// Threads: FERRY_NUM_THREADS (a positive integer) when set, else the machine's hardware threads.
// OpenBLAS runs single-threaded inside this budget (the dot kernel splits large products over the
// pool instead; see parallel.cpp).
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

namespace ferry::runtime::cpu {

// A non-owning reference to a callable fn(begin, end): a kernel's lambda passed to parallel_for
// without the heap allocation a std::function of a capturing lambda makes (kernels allocate
// nothing outside the plan; tests/heap checks it). It must not outlive the callable.
class RangeFn {
 public:
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, RangeFn>>>
  RangeFn(F&& f)  // NOLINT(google-explicit-constructor): lambdas convert at the call
      : object_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* o, int64_t b, int64_t e) { (*static_cast<std::remove_reference_t<F>*>(o))(b, e); }) {}
  void operator()(int64_t begin, int64_t end) const { call_(object_, begin, end); }

 private:
  void* object_;
  void (*call_)(void*, int64_t, int64_t);
};

// Calls fn(begin, end) on disjoint ranges that cover [0, n), each at least `grain` long (except
// the last), possibly on several threads at once, and returns when every call has returned. Small
// n (below 2 * grain) runs on the calling thread. An exception thrown by fn is rethrown here (the
// first one; the ranges not yet started are then skipped). fn may itself call parallel_for (on a
// pool thread or not): the nested call never waits for a thread that waits for it.
//
// How [0, n) is split depends on the thread count; a computation whose bits depend on the split
// (a sum) must instead fix its chunks from the sizes alone and combine them in order.
void parallel_for(int64_t n, int64_t grain, RangeFn fn);

// Threads parallel_for may use (1 means it runs everything on the caller).
int num_threads();

// Replaces the pool by one of `threads` threads (tests compare thread counts in one process). Only
// while no parallel_for is running.
void set_num_threads(int threads);

// Work for the pool's threads while they would otherwise wait, between jobs and for the last
// chunks of a job: `work` does a short piece of it (microseconds) and returns whether it found
// any. The CPU backend sets its copy queues' CopyQueue::help_any (runtime/copy_queue.h), so that
// copies run in the kernels' idle moments instead of preempting them. nullptr: none.
using IdleWork = bool (*)();
IdleWork set_idle_work(IdleWork work);  // returns the one it replaces

// memcpy split across the pool in pieces of at least 256 KiB (below that one thread saturates
// what a second would add).
void parallel_memcpy(void* dst, const void* src, int64_t bytes);

}  // namespace ferry::runtime::cpu
