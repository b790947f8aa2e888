// A training loop as users write it: the parameters are a struct of named weights, the optimizer
// state and the metrics are structs too, the step is jit-ed once and called like a function, and
// nothing is unpacked by position. An MLP learns y = sin(3x) with AdamW, gradient clipping and a
// warmup + cosine learning-rate schedule read from the traced step count; the state is saved to a
// safetensors file and loaded back.
//
// It is a test: it exits non-zero unless the loss falls 10x, the whole loop traced and compiled the
// step exactly once, and the saved state loads back equal.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>

#include <ferry/ferry.h>

namespace fy = ferry;

template <class T> struct Mlp {
  T w1, b1, w2, b2;
  FERRY_FIELDS(w1, b1, w2, b2)
};

template <class T> struct TrainState {
  Mlp<T> params;
  fy::optim::AdamWState<Mlp<T>> opt;
  FERRY_FIELDS(params, opt)
};

template <class T> struct Metrics {
  T loss, grad_norm, learning_rate;
  FERRY_FIELDS(loss, grad_norm, learning_rate)
};

fy::Tensor loss_fn(const Mlp<fy::Tensor>& p, const fy::Tensor& x, const fy::Tensor& y) {
  fy::Tensor h = fy::tanh(fy::matmul(x, p.w1) + p.b1);
  fy::Tensor err = fy::matmul(h, p.w2) + p.b2 - y;
  return fy::mean(err * err);
}

fy::Array normal(std::mt19937& rng, fy::Shape shape, double scale) {
  std::normal_distribution<float> dist(0.f, static_cast<float>(scale));
  std::vector<float> v(static_cast<size_t>(fy::num_elements(shape)));
  for (float& x : v) x = dist(rng);
  return fy::Array::from(v, shape);
}

int main() {
  const int hidden = 32, batch = 64, steps = 300;
  std::mt19937 rng(17);
  Mlp<fy::Array> params{normal(rng, {1, hidden}, 1.0), fy::zeros({hidden}), normal(rng, {hidden, 1}, 0.2), fy::zeros({1})};

  fy::optim::Schedule schedule = fy::optim::warmup_cosine_decay_schedule(0.0, 0.03, 20, steps, 0.001);
  auto train_step = fy::jit(
      [&](TrainState<fy::Tensor> s, fy::Tensor x, fy::Tensor y) {
        auto [loss, grads] = fy::value_and_grad(loss_fn)(s.params, x, y);
        auto [clipped, norm] = fy::optim::clip_by_global_norm(grads, 1.0);
        fy::Tensor lr = schedule(s.opt.count);
        auto [new_params, new_opt] = fy::optim::adamw(s.params, clipped, s.opt, lr, {.weight_decay = 1e-4});
        return std::pair{TrainState<fy::Tensor>{new_params, new_opt}, Metrics<fy::Tensor>{loss, norm, lr}};
      },
      {.name = "train_step", .donate_argnums = {0}});  // the state is updated in place

  TrainState<fy::Array> state{params, fy::optim::adamw_init(params)};
  const fy::JitCounters before = fy::jit_counters();
  float first_loss = 0, last_loss = 0;
  std::vector<double> seconds;  // per call: the first traces and compiles, the others reuse it
  for (int step = 0; step < steps; ++step) {
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::vector<float> xs(batch), ys;
    for (float& x : xs) x = u(rng);
    for (float x : xs) ys.push_back(std::sin(3 * x));
    fy::Array x = fy::Array::from(xs, {batch, 1}), y = fy::Array::from(ys, {batch, 1});
    auto start = std::chrono::steady_clock::now();
    auto [next, metrics] = train_step(state, x, y);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    state = next;
    const float loss = metrics.loss.to_vector<float>()[0];
    if (step == 0) first_loss = loss;
    last_loss = loss;
    if (step % 50 == 0 || step == steps - 1)
      std::printf("step %3d  loss %.5f  grad norm %.4f  lr %.5f\n", step, loss, metrics.grad_norm.to_vector<float>()[0],
                  metrics.learning_rate.to_vector<float>()[0]);
  }
  const fy::JitCounters after = fy::jit_counters();
  const int64_t traces = after.traces - before.traces, compiles = after.compiles - before.compiles;
  std::printf("%d steps: %lld trace, %lld compile; loss %.4f -> %.4f (%.1fx lower)\n", steps,
              static_cast<long long>(traces), static_cast<long long>(compiles), first_loss, last_loss,
              first_loss / last_loss);
  std::vector<double> later(seconds.begin() + 1, seconds.end());
  std::nth_element(later.begin(), later.begin() + static_cast<std::ptrdiff_t>(later.size() / 2), later.end());
  std::printf("first call (trace, compile, run) %.2f ms; later calls (cached) %.3f ms median\n", seconds[0] * 1e3,
              later[later.size() / 2] * 1e3);

  // A checkpoint: every array named by its path ("params.w1", "opt.mu.w1", "opt.count"), loaded back
  // into the same structure.
  const std::string path = (std::filesystem::temp_directory_path() / "ferry_structured_training.safetensors").string();
  fy::save(path, state, {{"step", std::to_string(steps)}});
  TrainState<fy::Array> restored = fy::load(path, state);
  bool same = true;
  std::vector<fy::Array> a = fy::detail::flat(state), b = fy::detail::flat(restored);
  for (size_t i = 0; i < a.size(); ++i) same = same && a[i].equals(b[i]);
  std::printf("checkpoint %s: %zu arrays (%s), loads back %s\n", path.c_str(), fy::load(path).size(),
              fy::load_metadata(path).at("step").c_str(), same ? "equal" : "DIFFERENT");
  std::filesystem::remove(path);

  const bool ok = first_loss / last_loss >= 10 && traces == 1 && compiles == 1 && same;
  if (!ok) std::printf("structured_training failed\n");
  return ok ? 0 : 1;
}
