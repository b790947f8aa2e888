// The jit cache: a second call with the same argument signature neither traces nor compiles (the
// process-wide counters do not move); a new shape, dtype, memory kind, vector length or map key
// compiles once more; the cache is bounded, can be cleared, and copies of a jit-ed function share it.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "ferry/ferry.h"
#include "support/error_of.h"

namespace fy = ferry;

namespace {

template <class T> struct Affine {
  T w, b;
  FERRY_FIELDS(w, b)
};

// Traces and compiles since `before`.
fy::JitCounters since(const fy::JitCounters& before) {
  fy::JitCounters now = fy::jit_counters();
  return {now.traces - before.traces, now.compiles - before.compiles};
}

}  // namespace

TEST(JitCache, TheSecondCallWithTheSameSignatureNeitherTracesNorCompiles) {
  auto f = fy::jit([](Affine<fy::Tensor> p, fy::Tensor x) { return fy::sum(fy::tanh(x * p.w + p.b)); });
  Affine<fy::Array> p{fy::ones({3}), fy::zeros({3})};
  fy::JitCounters before = fy::jit_counters();
  fy::Array first = f(p, fy::ones({3}))[0];
  EXPECT_EQ(since(before).traces, 1);
  EXPECT_EQ(since(before).compiles, 1);
  before = fy::jit_counters();
  fy::Array second = f(p, fy::full({3}, 2.0))[0];  // other values, same signature
  EXPECT_EQ(since(before).traces, 0);
  EXPECT_EQ(since(before).compiles, 0);
  EXPECT_NEAR(second.to_vector<float>()[0], 3 * std::tanh(2.f), 1e-6);
  EXPECT_NEAR(first.to_vector<float>()[0], 3 * std::tanh(1.f), 1e-6);
  EXPECT_EQ(f.cache_info().hits, 1);
  EXPECT_EQ(f.cache_info().misses, 1);
  EXPECT_EQ(f.cache_info().size, 1u);
}

TEST(JitCache, EachNewSignatureCompilesOnceMore) {
  auto f = fy::jit([](std::map<std::string, fy::Tensor> m) {
    fy::Tensor total = fy::constant(0.0, {}, fy::DType::f32);
    for (const auto& [k, v] : m) {
      fy::Tensor d = v.memory_kind() == fy::MemoryKind::device ? v : fy::device_put(v, fy::MemoryKind::device);
      total = total + fy::sum(fy::convert(d, fy::DType::f32));
    }
    return total;
  });
  using M = std::map<std::string, fy::Array>;
  auto compiles_of = [&](const M& m) {
    fy::JitCounters before = fy::jit_counters();
    f(m);
    return since(before).compiles;
  };
  EXPECT_EQ(compiles_of({{"a", fy::ones({2})}}), 1);
  EXPECT_EQ(compiles_of({{"a", fy::ones({2})}}), 0);
  EXPECT_EQ(compiles_of({{"a", fy::ones({3})}}), 1);                                // shape
  EXPECT_EQ(compiles_of({{"a", fy::ones({3})}}), 0);
  EXPECT_EQ(compiles_of({{"a", fy::ones({2}, fy::DType::f64)}}), 1);               // dtype
  EXPECT_EQ(compiles_of({{"a", fy::ones({2}, fy::DType::f32, fy::MemoryKind::pinned_host)}}), 1);  // memory kind
  EXPECT_EQ(compiles_of({{"b", fy::ones({2})}}), 1);                                // map key
  EXPECT_EQ(compiles_of({{"a", fy::ones({2})}, {"b", fy::ones({2})}}), 1);        // structure
  EXPECT_EQ(compiles_of({{"a", fy::ones({2})}}), 0);                                // all still kept
  EXPECT_EQ(f.cache_info().size, 6u);
  // Vector lengths are part of the signature too.
  auto g = fy::jit([](std::vector<fy::Tensor> v) { return v.back() * 2.0; });
  fy::JitCounters before = fy::jit_counters();
  g(std::vector{fy::ones({2})});
  g(std::vector{fy::ones({2}), fy::ones({2})});
  g(std::vector{fy::ones({2}), fy::ones({2})});
  EXPECT_EQ(since(before).compiles, 2);
}

TEST(JitCache, IsBoundedAndCanBeCleared) {
  auto f = fy::jit([](fy::Tensor x) { return x + 1.0; }, {.cache_capacity = 2});
  for (int n = 1; n <= 3; ++n) f(fy::ones({n}));
  fy::JitCacheInfo info = f.cache_info();
  EXPECT_EQ(info.size, 2u);
  EXPECT_EQ(info.capacity, 2u);
  EXPECT_EQ(info.evictions, 1);
  // {1} was the least recently used: it compiles again; {3} is still there.
  fy::JitCounters before = fy::jit_counters();
  f(fy::ones({3}));
  EXPECT_EQ(since(before).compiles, 0);
  f(fy::ones({1}));
  EXPECT_EQ(since(before).compiles, 1);
  f.clear_cache();
  EXPECT_EQ(f.cache_info().size, 0u);
  before = fy::jit_counters();
  f(fy::ones({3}));
  EXPECT_EQ(since(before).compiles, 1);
  EXPECT_EQ(fy::testing::error_of([] { fy::jit([](fy::Tensor x) { return x; }, {.cache_capacity = 0}); }).code(),
            fy::ErrorCode::invalid_argument);
}

TEST(JitCache, CopiesShareTheCacheAndOptionsApply) {
  auto f = fy::jit([](fy::Tensor x) { return fy::sum(x * x); },
                   {.compile = {.device_memory_limit = 1024}});
  auto copy = f;
  // The limit of JitOptions::compile is the one calls compile under.
  fy::Error e = fy::testing::error_of([&] { f(fy::ones({1024})); });
  EXPECT_EQ(e.code(), fy::ErrorCode::resource_exhausted);
  fy::JitCounters before = fy::jit_counters();
  EXPECT_EQ(copy(fy::ones({4}))[0].to_vector<float>()[0], 4.f);
  EXPECT_EQ(f(fy::ones({4}))[0].to_vector<float>()[0], 4.f);
  EXPECT_EQ(since(before).compiles, 1);
}

TEST(JitCache, DonatingCallsReuseTheProgramAndConsumeTheirArguments) {
  auto f = fy::jit([](fy::Tensor x) { return x * 2.0; }, {.donate_argnums = {0}});
  fy::Array x = fy::ones({4});
  for (int i = 0; i < 3; ++i) {
    fy::Array y = f(x)[0];
    EXPECT_TRUE(x.is_deleted());
    x = y;
  }
  EXPECT_EQ(x.to_vector<float>(), std::vector<float>(4, 8.f));
  EXPECT_EQ(f.cache_info().misses, 1);
}

// A cached call costs about what a kept Compiled call does (tracing and compiling took the time).
TEST(JitCache, ACachedCallCostsAboutAKeptCompiledCall) {
  auto f = fy::jit([](Affine<fy::Tensor> p, fy::Tensor x) { return fy::sum(fy::tanh(x * p.w + p.b)); });
  Affine<fy::Array> p{fy::ones({64}), fy::zeros({64})};
  fy::Array x = fy::ones({64});
  auto time = [](auto&& call, int n) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) call();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / n;
  };
  double uncached = time([&] { f.lower(p, x).compile()(p, x); }, 20);
  f(p, x);
  fy::Compiled kept = f.lower(p, x).compile();
  double cached = time([&] { f(p, x); }, 200);
  double compiled = time([&] { kept(p, x); }, 200);
  std::printf("per call: trace+compile+run %.1f us, cached jit %.1f us, kept Compiled %.1f us\n", uncached * 1e6,
              cached * 1e6, compiled * 1e6);
  EXPECT_LT(cached, uncached / 3);
}
