// What the cost model leaves out: every call maps a fresh arena, so its pages are touched for the
// first time on every call. Chains of 1 to 16 elementwise ops over f32[4M] (16 MiB) arrays share
// one 16 MiB arena: the slope of time against chain length is the kernels' streaming rate, the
// intercept is mostly the arena's first touch. Also the round trip through the copy queue at
// several sizes. docs/COST_MODEL.md quotes this bench's output:
//   build/bench/arena_touch_bench
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include <ferry/ferry.h>

namespace fy = ferry;

namespace {

double median_seconds(const fy::Compiled& c, const std::vector<fy::Array>& args, int repeats) {
  c.run(args);
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    c.run(args);
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main() {
  const int repeats = 7;
  const int64_t n = int64_t{1} << 22;
  const double mib = 1 << 20;
  fy::ShapeDtype vec{{n}};
  std::vector<fy::Array> two{fy::ones({n}), fy::ones({n})};
  std::vector<double> chain_seconds;
  const std::vector<int> lengths{1, 2, 4, 8, 16};
  for (int k : lengths) {
    auto chain = [k](fy::Tensor x, fy::Tensor y) {
      fy::Tensor t = x;
      for (int i = 0; i < k; ++i) t = i % 2 == 0 ? t + y : t * y;
      return fy::sum(t);
    };
    fy::Compiled c = fy::jit(chain).lower(vec, vec).compile();
    double s = median_seconds(c, two, repeats);
    chain_seconds.push_back(s);
    std::printf("elementwise chain of %2d over 16 MiB (arena %.0f MiB): %7.2f ms\n", k,
                static_cast<double>(c.memory_analysis().temp_size_in_bytes) / mib, s * 1e3);
  }
  // Each op reads two 16 MiB arrays and writes one.
  double per_op = (chain_seconds.back() - chain_seconds[2]) / (lengths.back() - lengths[2]);
  double first_touch = chain_seconds[0] - per_op;  // the chain of 1, less its op
  std::printf("streaming: %.3g B/s per op (48 MiB in %.2f ms); the arena's first touch: about %.2f ms for 16 MiB "
              "(%.3g B/s)\n",
              48 * mib / per_op, per_op * 1e3, first_touch * 1e3, 16 * mib / first_touch);

  for (int64_t m : {int64_t{1} << 18, int64_t{1} << 20, int64_t{1} << 22, int64_t{1} << 24}) {
    fy::ShapeDtype v{{m}};
    std::vector<fy::Array> one{fy::ones({m})};
    fy::Compiled round_trip = fy::jit([](fy::Tensor x) {
                                return fy::sum(fy::device_put(fy::device_put(x, fy::MemoryKind::pinned_host),
                                                              fy::MemoryKind::device));
                              }).lower(v).compile();
    fy::Compiled alone = fy::jit([](fy::Tensor x) { return fy::sum(x); }).lower(v).compile();
    double with = median_seconds(round_trip, one, repeats), without = median_seconds(alone, one, repeats);
    double bytes = 2.0 * 4.0 * static_cast<double>(m);
    std::printf("round trip of %5.1f MiB to pinned_host and back: %7.2f ms, the sum alone %6.2f ms -> %.3g B/s\n",
                4.0 * static_cast<double>(m) / mib, with * 1e3, without * 1e3, bytes / (with - without));
  }
  return 0;
}
