// Outputs own their memory and arguments can be donated: a call's arena is given back when it
// returns, whatever outputs the caller keeps; an output may be written into a donated argument's
// buffer (alias_size_in_bytes), and a donated Array can no longer be used.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "ferry/ferry.h"
#include "support/error_of.h"
#include "support/memory_check.h"
#include "training.h"

namespace fy = ferry;
namespace fm = ferry::models;
using ::testing::HasSubstr;

namespace {

const int64_t kMiB = 1 << 20;

// Resident memory of this process (Linux), in bytes.
int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * 4096;
}

fy::Array copy_of(const fy::Array& a) { return fy::Array::from_bytes(a.data(), a.nbytes(), a.dtype(), a.shape(), a.memory_kind()); }

TEST(Outputs, KeptScalarsDoNotPinTheArena) {
  // 1 Mi elements: four 4 MiB temporaries live at once, a scalar loss out.
  auto f = fy::jit([](fy::Tensor x) {
    fy::Tensor a = fy::exp(x * 0.5), b = fy::sin(x), c = fy::cos(x), d = fy::tanh(x);
    return fy::sum(a * b + c * d + a * c);
  });
  fy::Array x = fy::ones({kMiB});
  fy::CompileOptions unfused;
  unfused.fuse = false;  // fusion would keep the four temporaries in its blocks: this test needs them
  fy::Compiled c = f.lower(x).compile(unfused);
  fy::MemoryStats m = c.memory_analysis();
  ASSERT_GE(m.temp_size_in_bytes, 16 * kMiB) << c.memory_report();
  EXPECT_EQ(m.output_size_in_bytes, 4);
  // Warm up: the system allocator settles on how it serves arenas of this size (the first is
  // mapped and unmapped, later ones come from a heap block it keeps).
  for (int i = 0; i < 2; ++i) fy::testing::run_checked(c, {x});

  const int64_t counted_before = fy::bytes_in_use(fy::MemoryKind::device), resident_before = resident_bytes();
  std::vector<fy::Array> kept;
  for (int i = 0; i < 20; ++i) kept.push_back(fy::testing::run_checked(c, {x}).at(0));
  // The resources count exactly the 20 scalars; resident memory grows by far less than one arena
  // more (20 pinned arenas would be 320 MiB).
  EXPECT_EQ(fy::bytes_in_use(fy::MemoryKind::device) - counted_before, 20 * 4);
#if !defined(__SANITIZE_ADDRESS__)  // ASan keeps freed memory in quarantine, resident
  EXPECT_LT(resident_bytes() - resident_before, m.temp_size_in_bytes / 2);
#endif
  for (const fy::Array& loss : kept) EXPECT_EQ(loss.to_vector<float>(), kept.front().to_vector<float>());
}

TEST(Donation, AnOutputReusesTheDonatedBuffer) {
  auto update = [](fy::Tensor p, fy::Tensor g) { return p - g; };
  fy::Array p = fy::Array::from(std::vector<float>{1, 2, 3, 4}, {4}), g = fy::full({4}, 1.0);
  fy::Compiled kept = fy::jit(update).lower(p, g).compile();
  fy::Compiled donating = fy::jit(update, {.donate_argnums = {0}}).lower(p, g).compile();
  fy::MemoryStats a = kept.memory_analysis(), b = donating.memory_analysis();
  EXPECT_EQ(a.alias_size_in_bytes, 0);
  EXPECT_EQ(b.alias_size_in_bytes, 16);
  EXPECT_EQ(a.peak_memory_in_bytes - b.peak_memory_in_bytes, 16);

  const void* buffer = p.data();
  const int64_t before = fy::bytes_in_use(fy::MemoryKind::device);
  fy::Array q = fy::testing::run_checked(donating, {p, g}).at(0);
  EXPECT_EQ(q.to_vector<float>(), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ(q.data(), buffer);  // written in place of p
  EXPECT_EQ(fy::bytes_in_use(fy::MemoryKind::device), before);  // no new buffer for the output
  EXPECT_TRUE(p.is_deleted());
  EXPECT_FALSE(g.is_deleted());

  // Using the donated Array afterwards is an error, never a read of memory that is q's now.
  for (const auto& use : std::vector<std::function<void()>>{[&] { p.to_vector<float>(); }, [&] { p.data(); },
                                                            [&] { p.to_string(); }, [&] { donating.run({p, g}); },
                                                            [&] { kept.run({p, g}); }}) {
    fy::Error e = fy::testing::error_of(use);
    EXPECT_EQ(e.code(), fy::ErrorCode::invalid_argument);
    EXPECT_THAT(e.message(), HasSubstr("donated"));
  }
  // The result can be donated to the next step, as a training loop does.
  fy::Array r = donating.run({q, g}).at(0);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{-1, 0, 1, 2}));
  EXPECT_TRUE(q.is_deleted());
}

TEST(Donation, OnlyWhereTheArgumentIsNoLongerNeeded) {
  // exp(p) is written before p + 1 reads p: writing it into p's buffer would change p + 1.
  auto f = fy::jit([](fy::Tensor p) { return std::pair{fy::exp(p), p + 1.0}; }, {.donate_argnums = {0}});
  fy::Array p = fy::Array::from(std::vector<float>{0, 1}, {2});
  fy::Compiled c = f.lower(p).compile();
  EXPECT_EQ(c.memory_analysis().alias_size_in_bytes, 8);  // one of the two outputs, not both
  std::vector<fy::Array> out = fy::testing::run_checked(c, {p});
  EXPECT_FLOAT_EQ(out[0].to_vector<float>()[1], std::exp(1.0f));
  EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{1, 2}));

  // A donated buffer no output can use (another type) is freed when the call returns.
  auto g = fy::jit([](fy::Tensor p) { return fy::sum(p); }, {.donate_argnums = {0}});
  fy::Array big = fy::ones({1024});
  fy::Compiled gc = g.lower(big).compile();
  EXPECT_EQ(gc.memory_analysis().alias_size_in_bytes, 0);
  const int64_t before = fy::bytes_in_use(fy::MemoryKind::device);
  fy::Array s = fy::testing::run_checked(gc, {big}).at(0);
  EXPECT_EQ(fy::bytes_in_use(fy::MemoryKind::device), before - 4096 + 4);
  EXPECT_TRUE(big.is_deleted());
}

// Issue 32: a call that fails before it runs (here: the arena of a 256 TiB temporary cannot be had)
// consumed its donated arguments, so a training step that ran out of memory lost its parameters.
// Donation takes effect only once the run can no longer fail for a reason the caller could fix.
TEST(Donation, ACallThatCannotGetItsMemoryLeavesTheDonatedArgumentsIntact) {
  auto f = fy::jit(
      [](fy::Tensor x) {
        return x + fy::sum(fy::broadcast_in_dim(fy::sum(x), {int64_t{1} << 22, int64_t{1} << 22, 4}, {}));
      },
      {.donate_argnums = {0}, .compile = {.fuse = false}});
  fy::Array a = fy::Array::from(std::vector<float>{1, 2, 3}, {3});
  for (int attempt = 0; attempt < 2; ++attempt) {  // through the jit cache, then the cached program
    fy::Error e = fy::testing::error_of([&] { f(a); });
    EXPECT_EQ(e.code(), fy::ErrorCode::resource_exhausted) << e.what();
    EXPECT_FALSE(a.is_deleted());
    EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{1, 2, 3}));
  }
  fy::Compiled c = f.lower(a).compile({.fuse = false});
  EXPECT_EQ(fy::testing::error_of([&] { c.run({a}); }).code(), fy::ErrorCode::resource_exhausted);
  EXPECT_FALSE(a.is_deleted());
  // The same arrays can be retried, e.g. with a step that fits: that call consumes them.
  auto g = fy::jit([](fy::Tensor x) { return x * 2.0; }, {.donate_argnums = {0}});
  fy::Array doubled = g(a)[0];
  EXPECT_EQ(doubled.to_vector<float>(), (std::vector<float>{2, 4, 6}));
  EXPECT_TRUE(a.is_deleted());
}

// Issue 32: every use of a donated array names the operation refused (equals named Array::data).
TEST(Donation, UsesOfADonatedArrayNameTheOperation) {
  auto f = fy::jit([](fy::Tensor x) { return x * 2.0; }, {.donate_argnums = {0}});
  fy::Array x = fy::ones({4});
  fy::Array y = f(x)[0];
  ASSERT_TRUE(x.is_deleted());
  fy::Error mine = fy::testing::error_of([&] { x.equals(y); });
  EXPECT_EQ(mine.code(), fy::ErrorCode::invalid_argument);
  EXPECT_THAT(mine.message(), HasSubstr("Array::equals (this array): the f32[4] array was donated"));
  fy::Error theirs = fy::testing::error_of([&] { y.equals(x); });
  EXPECT_THAT(theirs.message(), HasSubstr("Array::equals (the other array): the f32[4] array was donated"));
  // Even against an array of another type: refused, not "unequal".
  EXPECT_THAT(fy::testing::error_of([&] { x.equals(fy::ones({2})); }).message(), HasSubstr("Array::equals"));
  EXPECT_THAT(fy::testing::error_of([&] { x.to_string(); }).message(), HasSubstr("Array::to_string"));
}

TEST(Donation, BadDonations) {
  auto f = fy::jit([](fy::Tensor a, fy::Tensor b) { return a + b; }, {.donate_argnums = {0}});
  fy::Array x = fy::ones({3});
  fy::Compiled c = f.lower(x, x).compile();
  fy::Error same = fy::testing::error_of([&] { c.run({x, x}); });
  EXPECT_EQ(same.code(), fy::ErrorCode::invalid_argument);
  EXPECT_THAT(same.message(), HasSubstr("argument 0 of main is donated, but the same buffer is also argument 1"));
  EXPECT_FALSE(x.is_deleted());  // a call refused before it starts consumes nothing
  fy::Error range = fy::testing::error_of([&] {
    fy::jit([](fy::Tensor a) { return a; }, {.donate_argnums = {1}}).lower(x);
  });
  EXPECT_EQ(range.code(), fy::ErrorCode::invalid_argument);
  EXPECT_THAT(range.message(), HasSubstr("donate_argnums: 1"));
  // A vector argument donates every array in it.
  auto v = fy::jit([](std::vector<fy::Tensor> ws) { return std::vector{ws[0] * 2.0, ws[1] * 2.0}; }, {.donate_argnums = {0}});
  std::vector<fy::Array> ws{fy::ones({2}), fy::ones({5})};
  fy::Compiled vc = v.lower(ws).compile();
  EXPECT_EQ(vc.memory_analysis().alias_size_in_bytes, 28);
  vc(ws);
  EXPECT_TRUE(ws[0].is_deleted() && ws[1].is_deleted());
}

// The check: a training step that donates its parameters and optimizer state reports them
// as aliased and needs less memory at its peak, with the same results.
TEST(Donation, TrainingStepDonatesParametersAndState) {
  fm::GptConfig cfg{.vocab = 12, .d_model = 32, .heads = 2, .seq = 16, .batch = 4, .layers = 2};
  fy::Compiled plain = fm::compile_gpt_train_step(cfg, std::nullopt, 0, 3e-3, /*donate=*/false);
  fy::Compiled donating = fm::compile_gpt_train_step(cfg, std::nullopt, 0, 3e-3, /*donate=*/true);
  fm::GptTrainer t(cfg, donating, 3);
  int64_t state_bytes = static_cast<int64_t>(t.count.nbytes());
  for (const auto* group : {&t.params, &t.m, &t.v})
    for (const fy::Array& a : *group) state_bytes += static_cast<int64_t>(a.nbytes());
  fy::MemoryStats a = plain.memory_analysis(), b = donating.memory_analysis();
  EXPECT_EQ(a.alias_size_in_bytes, 0);
  EXPECT_EQ(b.alias_size_in_bytes, state_bytes);
  // Undonated, the outputs' allocations are free until the update writes them and hold
  // temporaries of the passes before it (memory_plan.h): donation saves the state's bytes less
  // those temporaries, and still lowers the peak.
  EXPECT_GT(b.temp_size_in_bytes, a.temp_size_in_bytes);
  EXPECT_EQ(a.peak_memory_in_bytes - b.peak_memory_in_bytes,
            state_bytes - (b.temp_size_in_bytes - a.temp_size_in_bytes));
  EXPECT_LT(b.peak_memory_in_bytes, a.peak_memory_in_bytes);

  auto [tokens, targets] = fm::copy_task_batch(cfg, 5);
  std::vector<fy::Array> args = t.params;
  for (const auto* group : {&t.m, &t.v}) args.insert(args.end(), group->begin(), group->end());
  args.push_back(t.count);
  args.push_back(tokens);
  args.push_back(targets);
  std::vector<fy::Array> copies;
  for (const fy::Array& x : args) copies.push_back(copy_of(x));
  std::vector<fy::Array> want = fy::testing::run_checked(plain, copies);
  std::vector<fy::Array> got = fy::testing::run_checked(donating, args);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i].equals(want[i])) << "output " << i;
  EXPECT_TRUE(t.params[0].is_deleted());
}

}  // namespace
