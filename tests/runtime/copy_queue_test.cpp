// The copy queue: copies finish in ticket order, wait() sees their bytes, observers run on the copy
// thread, the destructor drains what is queued, and several threads may enqueue and wait at once.
// tools/sanitize.sh runs these under ThreadSanitizer.
#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
#include <thread>
#include <vector>

#include "runtime/copy_queue.h"

namespace rt = ferry::runtime;

namespace {

std::vector<int> counting(size_t n, int from) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), from);
  return v;
}

TEST(CopyQueue, WaitSeesTheBytesOfThatCopyAndEveryEarlierOne) {
  rt::CopyQueue q;
  std::vector<std::vector<int>> src, dst;
  for (int i = 0; i < 32; ++i) src.push_back(counting(1000, i * 1000)), dst.emplace_back(1000, -1);
  std::vector<uint64_t> tickets;
  for (int i = 0; i < 32; ++i) tickets.push_back(q.enqueue(dst[i].data(), src[i].data(), 1000 * sizeof(int)));
  for (size_t i = 1; i < tickets.size(); ++i) EXPECT_GT(tickets[i], tickets[i - 1]);
  q.wait(tickets[20]);
  for (int i = 0; i <= 20; ++i) EXPECT_EQ(dst[i], src[i]) << "copy " << i;
  q.wait(tickets.back());
  for (int i = 0; i < 32; ++i) EXPECT_EQ(dst[i], src[i]) << "copy " << i;
}

TEST(CopyQueue, ObserversRunOnTheCopyThreadInTicketOrder) {
  std::vector<uint64_t> seen;  // written on the copy thread only, read after wait()
  std::atomic<int> on_caller{0};
  std::thread::id caller = std::this_thread::get_id();
  std::vector<char> a(64, 'x'), b(64);
  uint64_t last = 0;
  {
    rt::CopyQueue q;
    for (int i = 0; i < 8; ++i)
      last = q.enqueue(b.data(), a.data(), 64, [&](uint64_t ticket, size_t bytes, double begin, double end) {
        on_caller += std::this_thread::get_id() == caller;
        EXPECT_EQ(bytes, 64u);
        EXPECT_LE(begin, end);
        seen.push_back(ticket);
      });
    q.wait(last);
    EXPECT_EQ(seen.size(), 8u);
  }
  EXPECT_EQ(on_caller, 0);
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], last - 7 + i);
}

TEST(CopyQueue, ZeroByteCopiesAndTheDestructorDrainsTheQueue) {
  std::vector<int> src = counting(4096, 7), dst(4096, 0);
  {
    rt::CopyQueue q;
    q.wait(q.enqueue(nullptr, nullptr, 0));
    for (int i = 0; i < 16; ++i) q.enqueue(dst.data() + i * 256, src.data() + i * 256, 256 * sizeof(int));
    // No wait: destruction finishes the queued copies before the thread stops.
  }
  EXPECT_EQ(dst, src);
}

TEST(CopyQueue, DrainWaitsForEveryQueuedCopy) {
  rt::CopyQueue q;
  std::vector<int> src = counting(1 << 16, 3), dst(1 << 16, 0);
  for (int i = 0; i < 16; ++i) q.enqueue(dst.data() + i * 4096, src.data() + i * 4096, 4096 * sizeof(int));
  q.drain();
  EXPECT_EQ(dst, src);
  q.drain();  // nothing queued: returns at once
}

TEST(CopyQueue, ThreadsEnqueueAndWaitConcurrently) {
  rt::CopyQueue q;
  constexpr int kThreads = 4, kCopies = 200;
  std::vector<std::vector<int>> src(kThreads * kCopies), dst(kThreads * kCopies);
  for (size_t i = 0; i < src.size(); ++i) src[i] = counting(64, static_cast<int>(i)), dst[i].assign(64, -1);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCopies; ++i) {
        size_t k = static_cast<size_t>(t * kCopies + i);
        q.wait(q.enqueue(dst[k].data(), src[k].data(), 64 * sizeof(int)));
        wrong += dst[k] != src[k];
      }
    });
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong, 0);
}

}  // namespace
