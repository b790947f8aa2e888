#include "runtime/copy_queue.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <limits>
#include <thread>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>
#endif

namespace ferry::runtime {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

namespace {

constexpr uint64_t kAnyTicket = std::numeric_limits<uint64_t>::max();

// Every queue of the process, for help_any. A helper counts itself in a queue's helpers_ while it
// holds the registry's lock, so a queue that has left the registry only waits for those counted.
struct Registry {
  std::mutex mutex;
  std::vector<CopyQueue*> queues;
};

Registry& registry() {
  static Registry* const r = new Registry;  // never destroyed: queues may outlive static order
  return *r;
}

// Pieces enqueued and not yet claimed, over every queue: help_any's fast way out.
std::atomic<int64_t> unclaimed_pieces{0};

int64_t pieces(size_t bytes) {
  return static_cast<int64_t>((bytes + CopyQueue::kPieceBytes - 1) / CopyQueue::kPieceBytes);
}

// memcpy with streaming (non-temporal) stores: the destination's lines go to memory without being
// read first and without taking the caches. Neither side of a transfer is read soon by the kernels
// that run beside it (an offload is read back in the backward pass; a prefetch is read in the next
// scan step), while those kernels want the caches for their own operands: offload_bench's step that
// offloads everything measured ~3% faster so (its ratio to the everything-saved step 1.04-1.09 ->
// 1.03-1.06 in six runs of offload_bench each), the backward pass's products most.
void stream_copy(char* dst, const char* src, size_t n) {
#if defined(__SSE2__)
  const size_t head = std::min(n, (16 - (reinterpret_cast<uintptr_t>(dst) & 15)) & 15);
  std::memcpy(dst, src, head);
  size_t i = head;
  for (; i + 64 <= n; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 48), d);
  }
  _mm_sfence();  // streaming stores are weakly ordered: visible before the piece is counted
  std::memcpy(dst + i, src + i, n - i);
#else
  std::memcpy(dst, src, n);
#endif
}

// The idle scheduling class: the thread runs only on a core with nothing else to run. Where that
// is refused, the lowest ordinary priority.
void run_when_idle() {
#if defined(__linux__)
  sched_param param{};
  if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &param) != 0)
    (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 19);
#endif
}

}  // namespace

CopyQueue::CopyQueue(size_t capacity, bool own_thread) : ring_(capacity > 0 ? capacity : 1) {
  {
    std::unique_lock lock(registry().mutex);
    registry().queues.push_back(this);
  }
  if (own_thread) thread_ = std::thread([this] { loop(); });
}

CopyQueue::~CopyQueue() {
  drain();
  {
    std::lock_guard lock(registry().mutex);
    auto& qs = registry().queues;
    qs.erase(std::find(qs.begin(), qs.end(), this));
  }
  // Helpers that found this queue before it left finish their piece (or find none) and let go.
  while (helpers_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  work_.notify_all();
  if (thread_.joinable()) thread_.join();
}

uint64_t CopyQueue::enqueue(void* dst, const void* src, size_t bytes, Observer observer) {
  std::unique_lock lock(mu_);
  while (pending_ == ring_.size())
    if (!copy_piece(lock, kAnyTicket)) space_.wait(lock);
  const uint64_t ticket = next_ticket_++;
  Task& task = ring_[(head_ + pending_) % ring_.size()];
  task = Task{ticket, static_cast<char*>(dst), static_cast<const char*>(src), bytes, std::move(observer)};
  ++pending_;
  if (bytes == 0) {  // nothing to copy: finished once every earlier copy is
    if (task.observer) task.begin = task.end = now_seconds();
    retire(lock);
    return ticket;
  }
  const int64_t n = pieces(bytes);
  unclaimed_.fetch_add(n, std::memory_order_relaxed);
  unclaimed_pieces.fetch_add(n, std::memory_order_relaxed);
  lock.unlock();
  work_.notify_one();
  return ticket;
}

void CopyQueue::wait(uint64_t ticket) {
  std::unique_lock lock(mu_);
  while (finished_ < ticket)
    if (!copy_piece(lock, ticket)) done_.wait(lock);  // the last pieces are being copied elsewhere
}

void CopyQueue::drain() {
  uint64_t last;
  {
    std::lock_guard lock(mu_);
    last = next_ticket_ - 1;
  }
  wait(last);
}

bool CopyQueue::help_any() {
  if (unclaimed_pieces.load(std::memory_order_relaxed) <= 0) return false;
  CopyQueue* q = nullptr;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    for (CopyQueue* c : r.queues)
      if (c->unclaimed_.load(std::memory_order_relaxed) > 0) {
        q = c;
        q->helpers_.fetch_add(1, std::memory_order_relaxed);
        break;
      }
  }
  if (q == nullptr) return false;
  bool copied;
  {
    std::unique_lock lock(q->mu_);
    copied = q->copy_piece(lock, kAnyTicket);
  }
  q->helpers_.fetch_sub(1, std::memory_order_release);  // q may be gone after this
  return copied;
}

bool CopyQueue::copy_piece(std::unique_lock<std::mutex>& lock, uint64_t up_to) {
  for (; unclaimed_from_ < pending_; ++unclaimed_from_) {
    const Task& t = ring_[(head_ + unclaimed_from_) % ring_.size()];
    if (t.claimed < t.bytes) break;
  }
  if (unclaimed_from_ == pending_) return false;
  // The slot does not move and the copy is not retired before this piece is counted, so `task`
  // stays valid while the lock is released.
  Task& task = ring_[(head_ + unclaimed_from_) % ring_.size()];
  if (task.ticket > up_to) return false;
  const size_t offset = task.claimed, n = std::min(kPieceBytes, task.bytes - offset);
  task.claimed += n;
  unclaimed_.fetch_sub(1, std::memory_order_relaxed);
  unclaimed_pieces.fetch_sub(1, std::memory_order_relaxed);
  if (offset == 0 && task.observer) task.begin = now_seconds();
  char* dst = task.dst + offset;
  const char* src = task.src + offset;
  lock.unlock();
  stream_copy(dst, src, n);
  lock.lock();
  task.copied += n;
  if (task.copied == task.bytes) {
    if (task.observer) task.end = now_seconds();
    retire(lock);
  }
  return true;
}

void CopyQueue::retire(std::unique_lock<std::mutex>&) {
  bool any = false;
  while (pending_ > 0) {
    Task& task = ring_[head_];
    if (task.copied != task.bytes) break;
    // Under the lock, so that observers see copies in ticket order whichever thread finished them.
    if (task.observer) task.observer(task.ticket, task.bytes, task.begin, task.end);
    task.observer = nullptr;
    finished_ = task.ticket;
    head_ = (head_ + 1) % ring_.size();
    --pending_;
    if (unclaimed_from_ > 0) --unclaimed_from_;
    any = true;
  }
  if (any) {
    done_.notify_all();
    space_.notify_all();
  }
}

void CopyQueue::loop() {
  run_when_idle();
  std::unique_lock lock(mu_);
  while (true) {
    if (copy_piece(lock, kAnyTicket)) continue;
    if (stop_) return;
    work_.wait(lock);
  }
}

}  // namespace ferry::runtime
