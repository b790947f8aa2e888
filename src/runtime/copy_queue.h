// The copy queue: the CPU backend's copy engine (runtime/backend.h), a thread that runs memory-kind
// copies in order, so they overlap with compute on the calling thread. copy_start enqueues, copy_done waits for its ticket. Pending copies wait in a
// ring of fixed capacity made with the queue (enqueue blocks while it is full), so a run's copies
// never allocate.
#pragma once

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
  // Called on the copy thread around each copy (for timelines), with steady-clock seconds.
  using Observer = CopyEngine::Observer;

  explicit CopyQueue(size_t capacity = 256);
  ~CopyQueue() override;
  CopyQueue(const CopyQueue&) = delete;
  CopyQueue& operator=(const CopyQueue&) = delete;

  uint64_t enqueue(void* dst, const void* src, size_t bytes, Observer observer = nullptr);
  // Every memory kind is host RAM here: the kinds change nothing.
  uint64_t enqueue(void* dst, MemoryKind, const void* src, MemoryKind, size_t bytes, Observer observer) override {
    return enqueue(dst, src, bytes, std::move(observer));
  }
  // Blocks until the copy with this ticket (and every earlier one) has finished.
  void wait(uint64_t ticket) override;
  // Blocks until every copy enqueued so far has finished: a run that stops early (an error) must
  // not free memory a copy still reads or writes.
  void drain() override;

 private:
  struct Task {
    uint64_t ticket;
    void* dst;
    const void* src;
    size_t bytes;
    Observer observer;
  };
  void loop();

  std::mutex mu_;
  std::condition_variable work_, done_, space_;
  std::vector<Task> ring_;       // pending copies: ring_[(head_ + i) % size] for i < pending_
  size_t head_ = 0, pending_ = 0;
  uint64_t next_ticket_ = 1, finished_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

// Seconds on the steady clock (the timeline's time base).
double now_seconds();

}  // namespace ferry::runtime
