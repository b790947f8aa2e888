#include "runtime/copy_queue.h"

#include <chrono>
#include <cstring>

namespace ferry::runtime {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

CopyQueue::CopyQueue(size_t capacity) : ring_(capacity > 0 ? capacity : 1), thread_([this] { loop(); }) {}

CopyQueue::~CopyQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_.notify_all();
  thread_.join();
}

uint64_t CopyQueue::enqueue(void* dst, const void* src, size_t bytes, Observer observer) {
  uint64_t ticket;
  {
    std::unique_lock<std::mutex> lock(mu_);
    space_.wait(lock, [&] { return pending_ < ring_.size(); });
    ticket = next_ticket_++;
    ring_[(head_ + pending_) % ring_.size()] = Task{ticket, dst, src, bytes, std::move(observer)};
    ++pending_;
  }
  work_.notify_one();
  return ticket;
}

void CopyQueue::wait(uint64_t ticket) {
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return finished_ >= ticket; });
}

void CopyQueue::drain() {
  std::unique_lock<std::mutex> lock(mu_);
  uint64_t last = next_ticket_ - 1;
  done_.wait(lock, [&] { return finished_ >= last; });
}

void CopyQueue::loop() {
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_.wait(lock, [&] { return stop_ || pending_ > 0; });
      if (pending_ == 0) return;  // stopping, nothing left
      task = std::move(ring_[head_]);
      head_ = (head_ + 1) % ring_.size();
      --pending_;
    }
    space_.notify_one();
    double begin = task.observer ? now_seconds() : 0;
    if (task.bytes) std::memcpy(task.dst, task.src, task.bytes);
    if (task.observer) task.observer(task.ticket, task.bytes, begin, now_seconds());
    {
      std::lock_guard<std::mutex> lock(mu_);
      finished_ = task.ticket;
    }
    done_.notify_all();
  }
}

}  // namespace ferry::runtime
