// The copy queue: copies finish in ticket order, wait() sees their bytes, observers run in ticket
// order, the destructor drains what is queued, and several threads may enqueue and wait at once.
// Copies move in pieces done by whichever thread has time: a queue without a thread of its own
// finishes every copy through the threads that wait for them, that need room in its ring, or that
// call help_any. tools/sanitize.sh runs these under ThreadSanitizer.
#include <gtest/gtest.h>

#include <algorithm>
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

TEST(CopyQueue, ObserversRunInTicketOrder) {
  std::vector<uint64_t> seen;  // written under the queue's lock, read after wait()
  std::vector<char> a(3 * rt::CopyQueue::kPieceBytes + 5, 'x'), b(a.size());
  uint64_t last = 0;
  {
    rt::CopyQueue q;
    auto observe = [&](uint64_t ticket, size_t bytes, double begin, double end) {
      EXPECT_EQ(bytes, ticket % 2 == 0 ? 64u : a.size()) << ticket;  // tickets start at 1
      EXPECT_LE(begin, end);
      seen.push_back(ticket);
    };
    for (int i = 0; i < 8; ++i) last = q.enqueue(b.data(), a.data(), i % 2 ? 64 : a.size(), observe);
    q.wait(last);
    EXPECT_EQ(seen.size(), 8u);
  }
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], last - 7 + i);
}

TEST(CopyQueue, CopiesOfManyPiecesArriveWhole) {
  rt::CopyQueue q;
  // Not a whole number of pieces, at an odd offset.
  const size_t n = 5 * rt::CopyQueue::kPieceBytes / sizeof(int) + 13;
  std::vector<int> src = counting(n + 1, 11), dst(n + 1, -1);
  q.wait(q.enqueue(dst.data() + 1, src.data() + 1, n * sizeof(int)));
  EXPECT_EQ(dst[0], -1);
  EXPECT_TRUE(std::equal(dst.begin() + 1, dst.end(), src.begin() + 1));
}

TEST(CopyQueue, WithoutAThreadTheWaiterCopies) {
  rt::CopyQueue q(256, /*own_thread=*/false);
  std::thread::id copier;
  std::vector<int> src = counting(3 * rt::CopyQueue::kPieceBytes / sizeof(int), 5), dst(src.size(), 0);
  const uint64_t t = q.enqueue(dst.data(), src.data(), src.size() * sizeof(int),
                               [&](uint64_t, size_t, double, double) { copier = std::this_thread::get_id(); });
  q.wait(t);
  EXPECT_EQ(dst, src);
  EXPECT_EQ(copier, std::this_thread::get_id());
}

TEST(CopyQueue, HelpAnyCopiesOnePieceAtATime) {
  rt::CopyQueue q(256, /*own_thread=*/false);
  std::vector<char> src(3 * rt::CopyQueue::kPieceBytes + 100, 'y'), dst(src.size(), 0);
  q.enqueue(dst.data(), src.data(), src.size());
  int pieces = 0;
  while (rt::CopyQueue::help_any()) ++pieces;
  EXPECT_EQ(pieces, 4);
  EXPECT_EQ(dst, src);
  q.drain();  // finished already: returns at once
}

TEST(CopyQueue, AFullRingMakesRoomByCopying) {
  rt::CopyQueue q(2, /*own_thread=*/false);  // no thread: nothing but the enqueuer can make room
  std::vector<std::vector<int>> src, dst;
  for (int i = 0; i < 9; ++i) src.push_back(counting(40000, i)), dst.emplace_back(40000, -1);
  for (int i = 0; i < 9; ++i) q.enqueue(dst[i].data(), src[i].data(), 40000 * sizeof(int));
  for (int i = 0; i < 7; ++i) EXPECT_EQ(dst[i], src[i]) << "copy " << i;  // made room for the last two
  q.drain();
  for (int i = 0; i < 9; ++i) EXPECT_EQ(dst[i], src[i]) << "copy " << i;
}

TEST(CopyQueue, HelpersAndWaitersShareTheCopies) {
  rt::CopyQueue q(8, /*own_thread=*/false);
  std::atomic<bool> stop{false};
  std::vector<std::thread> helpers;
  for (int h = 0; h < 3; ++h)
    helpers.emplace_back([&] {
      while (!stop) rt::CopyQueue::help_any();
    });
  constexpr int kCopies = 64;
  const size_t n = rt::CopyQueue::kPieceBytes / sizeof(int) * 2 + 7;
  std::vector<std::vector<int>> src(kCopies), dst(kCopies);
  int wrong = 0;
  for (int i = 0; i < kCopies; ++i) {
    src[i] = counting(n, i);
    dst[i].assign(n, -1);
    const uint64_t t = q.enqueue(dst[i].data(), src[i].data(), n * sizeof(int));
    if (i % 3 == 0) {
      q.wait(t);
      for (int j = 0; j <= i; ++j) wrong += dst[j] != src[j];
    }
  }
  q.drain();
  stop = true;
  for (std::thread& t : helpers) t.join();
  for (int i = 0; i < kCopies; ++i) wrong += dst[i] != src[i];
  EXPECT_EQ(wrong, 0);
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
