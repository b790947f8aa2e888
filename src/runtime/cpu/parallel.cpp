// The process's pool of compute threads behind parallel_for.
//
// Why not TBB: see README's dependency list (Debian's libtbb is not built for ThreadSanitizer, so
// `tools/sanitize.sh tsan` cannot see its synchronisation; the pool below is small and TSan-clean).
//
// Design: num_threads() - 1 workers plus the calling thread. A parallel_for publishes a Job (the
// function, n and a fixed number of chunks) on a list of open jobs and then claims chunks itself,
// like any worker, from the job's atomic counter until none are left; it then waits until the chunks
// others claimed have finished.
//
// Waiting spins for a short while before it blocks, for workers between jobs and for callers
// waiting for chunks: on a virtual machine a thread that blocks lets its vCPU halt, and waking a
// halted vCPU goes through the hypervisor, which after a few hundred milliseconds of idleness took
// long enough that for the first ~50 ms of a step the workers missed most jobs and every matrix
// product ran on the caller alone (bench/peers measured steps after an idle gap 1.5x slower; with
// one thread there was no difference). The spin is bounded (kSpin), yields the core to any other
// runnable thread of the machine, and costs nothing on a busy pool. While it spins, a thread does
// the idle work the CPU backend gives it (set_idle_work: the copy queues' pieces), so that copies
// fill the moments a kernel's threads wait for each other instead of taking a core from a kernel.
// Because the caller always works on its own job and only waits for chunks that are already
// running, a nested parallel_for (fn calling parallel_for, or a kernel run on a pool thread) cannot
// deadlock: at worst the nested job runs on its caller alone.
//
// Sizing: FERRY_NUM_THREADS when set (a positive integer), else std::thread::hardware_concurrency().
// The pool is made on first use and lives until exit.
//
// Matrix products: the pool is the process's only source of compute threads. ferry loads OpenBLAS
// single-threaded and keeps oneDNN's OpenMP team at one thread per caller (runtime/cpu/openblas.h,
// onednn_gemm.h), and the dot kernel splits a large product into blocks run on the pool: OpenBLAS's
// pthread build's idle threads spun in sched_yield long after each call, which took ~30% of the CPU
// next to our kernels and the copy queue's thread. Calls from several threads at once are safe in
// a single-threaded OpenBLAS (each call takes its own buffers).
#include "runtime/cpu/parallel.h"

#include <cstring>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <latch>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sched.h>

#include "runtime/cpu/onednn_gemm.h"

namespace ferry::runtime::cpu {
namespace {

// Chunks per thread: more than one so that a thread that finishes early takes another, few enough
// that claiming costs nothing next to a chunk of at least `grain` elements.
constexpr int64_t kChunksPerThread = 4;

// How long a waiting thread spins before it blocks: longer than the gaps between parallel kernels
// inside a step (a few single-threaded kernels), short next to the idle time between steps.
constexpr std::chrono::microseconds kSpin{300};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

std::atomic<IdleWork> idle_work{nullptr};  // set_idle_work

// Spins until done() or kSpin has passed; returns done(). While it spins it does the idle work
// (set_idle_work), and the clock starts again after each piece of it: a thread with such work keeps
// it up rather than block. Every 64 probes it reads the clock and yields, so that another thread
// of the machine that has work gets the core.
template <class Done>
bool spin_until(const Done& done) {
  auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (int i = 1;; ++i) {
    if (done()) return true;
    if (IdleWork work = idle_work.load(std::memory_order_relaxed); work && work()) {
      deadline = std::chrono::steady_clock::now() + kSpin;
      continue;
    }
    if (i % 64 == 0) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      sched_yield();
    } else {
      cpu_relax();
    }
  }
}

// One parallel_for in flight. It lives on its caller's stack: the caller returns only when every
// chunk is counted and no worker holds it any more (`users`, guarded by the pool's mutex).
struct Job {
  const RangeFn* fn = nullptr;
  int64_t n = 0;
  int64_t chunks = 0;
  std::atomic<int64_t> next{0};  // the next chunk to claim
  std::atomic<int64_t> done{0};  // chunks finished (run, skipped after an error, or failed)
  std::atomic<bool> failed{false};
  int users = 0;  // workers that took this job from the list and have not let go
  std::mutex error_mutex;
  std::exception_ptr error;

  // Claims and runs chunks until none are left.
  void work() {
    for (int64_t c = next.fetch_add(1, std::memory_order_relaxed); c < chunks;
         c = next.fetch_add(1, std::memory_order_relaxed)) {
      // Balanced bounds: every chunk holds floor(n / chunks) or one more, which is >= grain.
      const int64_t begin = n * c / chunks, end = n * (c + 1) / chunks;
      if (!failed.load(std::memory_order_relaxed)) {
        try {
          (*fn)(begin, end);
        } catch (...) {
          std::lock_guard lock(error_mutex);
          if (!error) error = std::current_exception();
          failed.store(true, std::memory_order_relaxed);
        }
      }
      // release: the chunk's writes happen-before the caller's return (it reads done with acquire).
      // The caller is still waiting for this chunk, so the Job is alive for the notify.
      if (done.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks) done.notify_all();
    }
  }

  bool open() const { return next.load(std::memory_order_relaxed) < chunks; }
};

class Pool {
 public:
  explicit Pool(int threads) : threads_(threads) {
    jobs_.reserve(256);  // nesting depth times callers; growing later would allocate inside a kernel
    workers_.reserve(static_cast<size_t>(threads - 1));
    // Every worker has made its per-thread state before the pool is used: a worker the system
    // starts late would otherwise make it during the first run it joins (tests/heap saw one).
    std::latch prepared(threads - 1);
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this, &prepared] { worker_loop(prepared); });
    prepared.wait();
  }

  ~Pool() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  int threads() const { return threads_; }

  void run(int64_t n, int64_t chunks, const RangeFn& fn) {
    Job job;
    job.fn = &fn;
    job.n = n;
    job.chunks = chunks;
    {
      std::lock_guard lock(mutex_);
      jobs_.push_back(&job);
    }
    published_.fetch_add(1, std::memory_order_release);
    // One wake per chunk beyond the caller's own, at most one per worker.
    if (chunks - 1 >= static_cast<int64_t>(workers_.size())) wake_.notify_all();
    else
      for (int64_t i = 0; i + 1 < chunks; ++i) wake_.notify_one();
    job.work();
    spin_until([&] { return job.done.load(std::memory_order_acquire) == chunks; });
    for (int64_t d = job.done.load(std::memory_order_acquire); d != chunks;
         d = job.done.load(std::memory_order_acquire))
      job.done.wait(d, std::memory_order_acquire);
    {
      std::unique_lock lock(mutex_);
      jobs_.erase(std::find(jobs_.begin(), jobs_.end(), &job));
      released_.wait(lock, [&] { return job.users == 0; });
    }
    if (job.error) std::rethrow_exception(job.error);
  }

 private:
  // The newest open job: nested jobs come after their parents, and finishing them first is what
  // lets the parents' chunks finish.
  Job* open_job() const {
    for (auto it = jobs_.rbegin(); it != jobs_.rend(); ++it)
      if ((*it)->open()) return *it;
    return nullptr;
  }

  void worker_loop(std::latch& prepared) {
    // The per-thread state of the libraries the kernels call, made now rather than inside a run
    // (a kernel allocates nothing outside the plan; tests/heap).
    prepare_kernel_thread();
    prepared.count_down();  // the constructor's latch: not touched again
    std::unique_lock lock(mutex_);
    while (true) {
      Job* job = nullptr;
      if (!stop_ && (job = open_job()) == nullptr) {
        // Nothing open: spin a while for the next job before blocking (see kSpin).
        const uint64_t seen = published_.load(std::memory_order_acquire);
        lock.unlock();
        spin_until([&] { return published_.load(std::memory_order_acquire) != seen || stop_.load(); });
        lock.lock();
      }
      wake_.wait(lock, [&] { return stop_ || (job = open_job()) != nullptr; });
      if (stop_) return;
      ++job->users;
      lock.unlock();
      job->work();  // fn is only called for claimed chunks, which the caller waits for
      lock.lock();
      if (--job->users == 0) released_.notify_all();
    }
  }

  const int threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;      // workers: a job was published, or stop
  std::condition_variable released_;  // callers: a worker let go of a job
  std::vector<Job*> jobs_;            // published and not yet returned, oldest first
  // Set under mutex_ (the workers' wait reads it there); atomic for the spin, which reads it without.
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> published_{0};  // jobs published so far, for the spin
};

int configured_threads() {
  if (const char* env = std::getenv("FERRY_NUM_THREADS")) {
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && v > 0) return static_cast<int>(std::min<long>(v, 1024));
    // A malformed value falls back to the machine's size rather than failing every kernel.
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

std::unique_ptr<Pool>& pool_slot() {
  static std::unique_ptr<Pool> slot;
  return slot;
}

Pool& pool() {
  // Made once, thread-safely, on first use; set_num_threads may replace it later.
  static const bool made = [] {
    pool_slot() = std::make_unique<Pool>(configured_threads());
    return true;
  }();
  (void)made;
  return *pool_slot();
}

}  // namespace

void parallel_for(int64_t n, int64_t grain, RangeFn fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  if (n < 2 * grain) {
    fn(0, n);
    return;
  }
  Pool& p = pool();
  if (p.threads() == 1) {
    fn(0, n);
    return;
  }
  const int64_t chunks = std::min(n / grain, kChunksPerThread * p.threads());
  p.run(n, chunks, fn);
}

int num_threads() { return pool().threads(); }

void set_num_threads(int threads) {
  pool();  // the first pool, so that it cannot replace this one later
  pool_slot().reset();
  pool_slot() = std::make_unique<Pool>(std::max(1, threads));
}

IdleWork set_idle_work(IdleWork work) { return idle_work.exchange(work, std::memory_order_relaxed); }

// memcpy split across the pool in pieces of at least 256 KiB (below that one thread saturates
// what a second would add).
void parallel_memcpy(void* dst, const void* src, int64_t bytes) {
  constexpr int64_t kGrainBytes = int64_t{256} << 10;
  parallel_for(bytes, kGrainBytes, [&](int64_t b, int64_t e) {
    std::memcpy(static_cast<char*>(dst) + b, static_cast<const char*>(src) + b, static_cast<size_t>(e - b));
  });
}

}  // namespace ferry::runtime::cpu
