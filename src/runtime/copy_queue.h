// The copy queue: the CPU backend's copy engine (runtime/backend.h). copy_start enqueues, copy_done
// waits for its ticket; copies finish in ticket order.
//
// There is no DMA engine on a CPU: every byte a copy moves is moved by a core that the kernels also
// use. A copy thread of ordinary priority preempts a compute thread in the middle of a parallel
// kernel, and the kernel's other threads then wait for that chunk: the copy costs its time on every
// core, not on one (offload_bench measured ~1.2x the everything-saved step so). So the bytes are
// moved in pieces (kPieceBytes) by whichever thread has nothing better to do:
// - the pool's threads while they would wait (cpu::set_idle_work, set by the CPU backend): between
//   jobs, and for the last chunks of a job;
// - a thread that waits for a ticket (copy_done, a scan's double buffer) or for room in the ring,
//   which copies the pieces it waits for itself rather than sleep;
// - the queue's own thread, at the idle scheduling class (SCHED_IDLE): it runs only on a core that
//   has no other thread to run, so it never preempts a kernel.
// Pieces are copied with streaming stores (copy_queue.cpp says why). Pending copies wait in a ring
// of fixed capacity made with the queue (enqueue helps, then blocks, while it is full), so a run's
// copies never allocate.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/backend.h"

namespace ferry::runtime {

class CopyQueue final : public CopyEngine {
 public:
  // Called around each copy (for timelines), with steady-clock seconds: from the start of its first
  // piece to the end of its last, in ticket order, on whichever thread finished it.
  using Observer = CopyEngine::Observer;

  // Pieces are small enough that a pool thread which takes one while it waits for a job's last
  // chunk is late by microseconds, and large enough that claiming one costs nothing beside it.
  static constexpr size_t kPieceBytes = size_t{64} << 10;

  // Without a thread of its own (own_thread false; tests), a queue's copies are moved by the threads
  // that wait for them and by help_any alone.
  explicit CopyQueue(size_t capacity = 256, bool own_thread = true);
  ~CopyQueue() override;
  CopyQueue(const CopyQueue&) = delete;
  CopyQueue& operator=(const CopyQueue&) = delete;

  uint64_t enqueue(void* dst, const void* src, size_t bytes, Observer observer = nullptr);
  // Every memory kind is host RAM here: the kinds change nothing.
  uint64_t enqueue(void* dst, MemoryKind, const void* src, MemoryKind, size_t bytes, Observer observer) override {
    return enqueue(dst, src, bytes, std::move(observer));
  }
  // Returns once the copy with this ticket (and every earlier one) has finished, copying pieces of
  // them on the calling thread meanwhile.
  void wait(uint64_t ticket) override;
  // Returns once every copy enqueued so far has finished: a run that stops early (an error) must not
  // free memory a copy still reads or writes.
  void drain() override;

  // Copies one piece of some queue's pending copies on the calling thread; false when no queue had
  // a piece left to claim. Cheap when there is none (one relaxed atomic load): the pool calls it
  // while it spins.
  static bool help_any();

 private:
  struct Task {
    uint64_t ticket = 0;
    char* dst = nullptr;
    const char* src = nullptr;
    size_t bytes = 0;
    Observer observer;
    size_t claimed = 0;  // bytes handed out to copying threads
    size_t copied = 0;   // bytes copied
    double begin = 0, end = 0;  // when its first piece started and its last ended (for the observer)
  };
  // Claims the next piece of the oldest copy with ticket <= up_to that has bytes left to claim,
  // copies it with `lock` released, and retires what that finished; false when there was none.
  bool copy_piece(std::unique_lock<std::mutex>& lock, uint64_t up_to);
  // Pops finished copies from the head of the ring in ticket order (their observers run here).
  void retire(std::unique_lock<std::mutex>& lock);
  void loop();

  std::mutex mu_;
  std::condition_variable work_, done_, space_;
  std::vector<Task> ring_;  // copies not yet retired: ring_[(head_ + i) % size] for i < pending_
  size_t head_ = 0, pending_ = 0;
  size_t unclaimed_from_ = 0;  // ring position (from head_) of the first copy with bytes to claim
  uint64_t next_ticket_ = 1, finished_ = 0;
  bool stop_ = false;
  std::atomic<int64_t> unclaimed_{0};  // pieces not yet claimed (help_any reads it unlocked)
  std::atomic<int> helpers_{0};        // help_any calls inside this queue
  std::thread thread_;
};

// Seconds on the steady clock (the timeline's time base).
double now_seconds();

}  // namespace ferry::runtime
