// Carried state in host memory between calls, chosen by the planner (compiler/offload_state.h):
// an AdamW step whose moments do not fit beside everything else under the limit keeps as few of
// them as it needs in host memory, fetching each for its update. The step computes what it
// computes on the device alone, bit for bit; every run measures what was planned; the new state
// comes back where the plan keeps it, and passing it back neither moves nor recompiles anything.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <cmath>

#include "ferry/ferry.h"
#include "support/memory_check.h"

namespace fy = ferry;

namespace {

// Six layers of equal width: each update needs two moments of one layer on the device at a time.
template <class T> struct Mlp {
  T w1, w2, w3, w4, w5, w6;
  FERRY_FIELDS(w1, w2, w3, w4, w5, w6)
};
template <class T> struct State {
  Mlp<T> params;
  fy::optim::AdamWState<Mlp<T>> opt;
  FERRY_FIELDS(params, opt)
};

fy::Tensor loss_fn(const Mlp<fy::Tensor>& p, const fy::Tensor& x, const fy::Tensor& y) {
  fy::Tensor h = x;
  for (const fy::Tensor* w : {&p.w1, &p.w2, &p.w3, &p.w4, &p.w5}) h = fy::tanh(fy::matmul(h, *w));
  fy::Tensor err = fy::matmul(h, p.w6) - y;
  return fy::mean(err * err);
}

// Deterministic values of about `scale` (a different phase per array).
fy::Array values(int phase, fy::Shape shape, double scale) {
  std::vector<float> v(static_cast<size_t>(fy::num_elements(shape)));
  for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>(scale * std::sin(0.37 * static_cast<double>(k) + phase));
  return fy::Array::from(v, shape);
}

struct Problem {
  State<fy::Array> state;
  fy::Array x, y;
};

Problem problem() {
  Mlp<fy::Array> p{values(1, {64, 64}, 0.2), values(2, {64, 64}, 0.2), values(3, {64, 64}, 0.2),
                   values(4, {64, 64}, 0.2), values(5, {64, 64}, 0.2), values(6, {64, 64}, 0.2)};
  return {{p, fy::optim::adamw_init(p)}, values(7, {8, 64}, 1.0), values(8, {8, 64}, 1.0)};
}

State<fy::Array> copy(const State<fy::Array>& s) {
  std::vector<fy::Array> leaves = fy::detail::flat(s);
  for (fy::Array& a : leaves) a = fy::Array::from_bytes(a.data(), a.nbytes(), a.dtype(), a.shape());
  size_t pos = 0;
  return fy::detail::unflatten(s, leaves, pos);
}

auto make_step(const fy::CompileOptions& options) {
  return fy::jit(
      [](State<fy::Tensor> s, fy::Tensor x, fy::Tensor y) {
        auto [loss, grads] = fy::value_and_grad(loss_fn)(s.params, x, y);
        auto [params, opt] = fy::optim::adamw(s.params, grads, s.opt, 1e-2);
        return std::pair{State<fy::Tensor>{params, opt}, loss};
      },
      {.donate_argnums = {0}, .compile = options});
}

int64_t moment_bytes(const State<fy::Array>& s) {
  int64_t n = 0;
  for (const auto* m : {&s.opt.mu, &s.opt.nu})
    for (const fy::Array& a : fy::detail::flat(*m)) n += static_cast<int64_t>(a.nbytes());
  return n;
}

}  // namespace

TEST(StateOffload, TheFewestMomentsInHostMemoryThatFitAndTheSameSteps) {
  Problem s = problem();
  // Unfused, so that the peaks follow the bytes moved (a fused group's workspace would change
  // with where the fetches break the groups; FusedStateOffload below runs the default).
  const fy::CompileOptions plain{.fuse = false};
  const fy::Compiled unlimited = make_step(plain).lower(s.state, s.x, s.y).compile(plain);
  const int64_t peak = unlimited.memory_analysis().peak_memory_in_bytes;
  // Limits no choice of activations reaches (they are a few KiB here), each lower than the last.
  const int64_t moments = moment_bytes(s.state);
  int64_t moved_before = 0;
  for (int64_t below : {moments / 8, moments / 4, moments / 2}) {
    fy::CompileOptions fit = plain;
    fit.device_memory_limit = peak - below;
    fit.fit_to_limit = true;
    const fy::MemoryStats m = make_step({}).lower(s.state, s.x, s.y).compile(fit).memory_analysis();
    std::printf("device peak %lld B unlimited; under %lld B: %lld B of %lld B of moments in host memory, peak %lld B\n",
                static_cast<long long>(peak), static_cast<long long>(fit.device_memory_limit),
                static_cast<long long>(m.host_argument_size_in_bytes), static_cast<long long>(moments),
                static_cast<long long>(m.peak_memory_in_bytes));
    EXPECT_LE(m.peak_memory_in_bytes, fit.device_memory_limit);
    EXPECT_GT(m.host_argument_size_in_bytes, moved_before) << "a lower limit moves more";
    EXPECT_LT(m.host_argument_size_in_bytes, moments) << "as few as fit, not all of them";
    EXPECT_EQ(m.host_argument_size_in_bytes, m.host_output_size_in_bytes);
    moved_before = m.host_argument_size_in_bytes;
  }

  fy::CompileOptions fit = plain;
  fit.device_memory_limit = peak - moments / 4;
  fit.fit_to_limit = true;
  auto limited_step = make_step(fit);
  const fy::Compiled limited = limited_step.lower(s.state, s.x, s.y).compile(fit);
  // Three steps each way, from the same state: the same numbers, bit for bit.
  State<fy::Array> a = copy(s.state), b = copy(s.state);
  auto plain_step = make_step(plain);
  const fy::JitCounters before = fy::jit_counters();
  for (int i = 0; i < 3; ++i) {
    auto [na, la] = plain_step(a, s.x, s.y);
    auto [nb, lb] = limited_step(b, s.x, s.y);
    EXPECT_TRUE(la.equals(lb)) << "step " << i;
    EXPECT_TRUE(b.params.w1.is_deleted()) << "the donated state is consumed, moved or not";
    a = na;
    b = nb;
  }
  const fy::JitCounters after = fy::jit_counters();
  EXPECT_EQ(after.traces - before.traces, 2) << "one trace each; the state coming back in host memory finds the same step";
  const std::vector<fy::Array> la = fy::detail::flat(a), lb = fy::detail::flat(b);
  for (size_t i = 0; i < la.size(); ++i) EXPECT_TRUE(la[i].equals(lb[i])) << "leaf " << i;
  int in_host = 0;
  for (const auto* m : {&b.opt.mu, &b.opt.nu})
    for (const fy::Array& t : fy::detail::flat(*m)) in_host += t.memory_kind() == fy::MemoryKind::pinned_host;
  EXPECT_GT(in_host, 0);

  // Measured = planned, whether the state comes in from the device (moved first) or from the host.
  std::vector<fy::Array> args = fy::detail::flat(copy(s.state));
  args.insert(args.end(), {s.x, s.y});
  std::vector<fy::Array> out = fy::testing::run_checked(limited, args);
  std::vector<fy::Array> again = fy::detail::flat(b);  // the state where the plan keeps it
  again.insert(again.end(), {s.x, s.y});
  fy::testing::run_checked(limited, again);
}

// Fusion adds nothing to this step's peak. It used to: AdamW's updates of the six leaves all read
// the bias corrections, so the fuser made them one group of 18 results, which ran once every
// gradient existed (all six alive at once) and whose kernel kept every result to the end of a
// 1,024-element block (a region beyond the stack, planned as workspace per thread): 563,592 B fused
// against 367,180 B unfused. Each leaf's update is now a group of its own, with blocks cut to fit
// the stack. The fused step computes what the unfused one does.
TEST(FusedAdamW, TheFusedStepPeaksNoHigherThanTheUnfusedOne) {
  const Problem s = problem();
  const fy::CompileOptions unfused{.fuse = false};
  const fy::Compiled plain = make_step(unfused).lower(s.state, s.x, s.y).compile(unfused);
  const fy::Compiled fused = make_step({}).lower(s.state, s.x, s.y).compile();
  EXPECT_NE(fused.as_text().find("fused"), std::string::npos);
  EXPECT_LE(fused.memory_analysis().peak_memory_in_bytes, plain.memory_analysis().peak_memory_in_bytes)
      << fused.memory_report() << "\nunfused:\n" << plain.memory_report();
  std::printf("fused step peak %lld B, unfused %lld B\n",
              static_cast<long long>(fused.memory_analysis().peak_memory_in_bytes),
              static_cast<long long>(plain.memory_analysis().peak_memory_in_bytes));
  auto [a_state, a_loss] = make_step(unfused)(copy(s.state), s.x, s.y);
  auto [b_state, b_loss] = make_step({})(copy(s.state), s.x, s.y);
  const std::vector<fy::Array> a = fy::detail::flat(a_state), b = fy::detail::flat(b_state);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].dtype() != fy::DType::f32) {
      EXPECT_TRUE(a[i].equals(b[i])) << "leaf " << i;
      continue;
    }
    const std::vector<float> x = a[i].to_vector<float>(), y = b[i].to_vector<float>();
    for (size_t k = 0; k < x.size(); ++k) ASSERT_NEAR(x[k], y[k], 1e-5f * (1 + std::abs(x[k]))) << "leaf " << i;
  }
}

TEST(StateOffload, StateInHostMemoryGoesAnywhereADeviceArrayGoes) {
  Problem s = problem();
  const int64_t peak =
      make_step({.fuse = false}).lower(s.state, s.x, s.y).compile({.fuse = false}).memory_analysis().peak_memory_in_bytes;
  auto step = make_step({.device_memory_limit = peak - moment_bytes(s.state) / 2, .fit_to_limit = true, .fuse = false});
  State<fy::Array> next = step(copy(s.state), s.x, s.y).first;
  const std::vector<fy::Array> leaves = fy::detail::flat(next);
  auto moved = std::find_if(leaves.begin(), leaves.end(),
                            [](const fy::Array& a) { return a.memory_kind() == fy::MemoryKind::pinned_host; });
  ASSERT_NE(moved, leaves.end());
  // Another jitted function traces it as the device array it stands for, and the call moves it.
  auto norm = fy::jit([](fy::Tensor a) { return fy::sum(a * a); });
  const fy::Array on_device = fy::Array::from_bytes(moved->data(), moved->nbytes(), fy::DType::f32, moved->shape());
  EXPECT_TRUE(norm(*moved)[0].equals(norm(on_device)[0]));
  EXPECT_EQ(norm.lower(*moved).as_text().find("pinned_host"), std::string::npos) << norm.lower(*moved).as_text();
}

TEST(StateOffload, FusedStateOffload) {
  // The default options: under a limit below the unlimited peak, state in host memory, same steps.
  Problem s = problem();
  const int64_t peak = make_step({}).lower(s.state, s.x, s.y).compile().memory_analysis().peak_memory_in_bytes;
  auto step = make_step({.device_memory_limit = peak - moment_bytes(s.state) / 8, .fit_to_limit = true});
  auto plain = make_step({});
  State<fy::Array> a = copy(s.state), b = copy(s.state);
  for (int i = 0; i < 2; ++i) {
    auto [na, la] = plain(a, s.x, s.y);
    auto [nb, lb] = step(b, s.x, s.y);
    EXPECT_TRUE(la.equals(lb));
    a = na;
    b = nb;
  }
  const fy::MemoryStats m = step.lower(b, s.x, s.y).compile({.device_memory_limit = peak - moment_bytes(s.state) / 8,
                                                             .fit_to_limit = true}).memory_analysis();
  EXPECT_GT(m.host_argument_size_in_bytes, 0);
  EXPECT_LE(m.peak_memory_in_bytes, peak - moment_bytes(s.state) / 8);
}

TEST(StateOffload, ALimitBelowEvenThatSaysSo) {
  Problem s = problem();
  auto step = make_step({.device_memory_limit = 4096, .fit_to_limit = true});
  try {
    step(copy(s.state), s.x, s.y);
    FAIL() << "compiled under 4 KiB";
  } catch (const fy::Error& e) {
    EXPECT_EQ(e.code(), fy::ErrorCode::resource_exhausted);
    EXPECT_NE(std::string(e.what()).find("arrays of state the step carries in host memory too"), std::string::npos) << e.what();
  }
}
