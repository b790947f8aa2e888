// The examples of docs/guide/training.md ("Trees and training"), each a function that returns
// whether what the page says of it holds. The page quotes the parts between the checks; the
// docs.snippets test checks that every quoted block is still in this file, and docs.training runs it.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <ferry/ferry.h>

namespace fy = ferry;

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  if (!ok) ++failures;
}

float scalar(const fy::Array& a) { return a.to_vector<float>()[0]; }

// ---- Training with trees -------------------------------------------------------------------------

template <class T> struct Mlp {                       // T: Tensor inside the step, Array outside
  T w1, b1, w2, b2;
  FERRY_FIELDS(w1, b1, w2, b2)                        // registers the struct as a tree
};
template <class T> struct State {
  Mlp<T> params;
  fy::optim::AdamWState<Mlp<T>> opt;                  // count, mu, nu
  FERRY_FIELDS(params, opt)
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

void training_with_trees() {
  // y = sin(3x) on [-1, 1]: 300 batches of 64.
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<std::pair<fy::Array, fy::Array>> batches;
  for (int b = 0; b < 300; ++b) {
    std::vector<float> xs(64), ys;
    for (float& x : xs) x = u(rng);
    for (float x : xs) ys.push_back(std::sin(3 * x));
    batches.emplace_back(fy::Array::from(xs, {64, 1}), fy::Array::from(ys, {64, 1}));
  }
  Mlp<fy::Array> params{normal(rng, {1, 32}, 1.0), fy::zeros({32}), normal(rng, {32, 1}, 0.2), fy::zeros({1})};
  auto loss_of = fy::jit(loss_fn);
  const float first_loss = scalar(loss_of(params, batches[0].first, batches[0].second)[0]);
  const fy::JitCounters before = fy::jit_counters();

  auto schedule = fy::optim::warmup_cosine_decay_schedule(0.0, 3e-2, /*warmup*/ 20, /*total*/ 300, 1e-3);
  auto step = fy::jit([&](State<fy::Tensor> s, fy::Tensor x, fy::Tensor y) {
    auto [loss, grads] = fy::value_and_grad(loss_fn)(s.params, x, y);
    auto [clipped, norm] = fy::optim::clip_by_global_norm(grads, 1.0);
    fy::Tensor lr = schedule(s.opt.count);              // traced: no recompilation as it changes
    auto [params, opt] = fy::optim::adamw(s.params, clipped, s.opt, lr, {.weight_decay = 1e-4});
    return std::pair{State<fy::Tensor>{params, opt}, loss};
  }, {.donate_argnums = {0}});

  State<fy::Array> state{params, fy::optim::adamw_init(params)};
  for (auto& [x, y] : batches) {
    auto [next, loss] = step(state, x, y);              // typed: State<Array>, Array
    state = next;
  }
  fy::save("ckpt.safetensors", state);                  // "params.w1", "opt.mu.w1", "opt.count", ...
  state = fy::load("ckpt.safetensors", state);          // checked against the structure and shapes

  const fy::JitCounters after = fy::jit_counters();
  check(after.traces - before.traces == 1 && after.compiles - before.compiles == 1,
        "300 steps trace and compile the step once");
  check(step.cache_info().misses == 1 && step.cache_info().hits == 299, "the jit cache: 1 miss, 299 hits");
  const float last_loss = scalar(loss_of(state.params, batches[0].first, batches[0].second)[0]);
  std::printf("loss on the first batch: %.4f before, %.4f after\n", first_loss, last_loss);
  check(last_loss * 10 < first_loss, "the loss falls 10x");
  const fy::NamedArrays saved = fy::load("ckpt.safetensors");
  check(saved.count("params.w1") && saved.count("opt.mu.w1") && saved.count("opt.count"),
        "the checkpoint names each array by its path in the tree");
  std::filesystem::remove("ckpt.safetensors");
}

// ---- Gradients and loops -------------------------------------------------------------------------

void gradients_and_loops() {
  const int layers = 4, d = 8;
  std::mt19937 rng(3);
  fy::Array x0 = normal(rng, {2, d}, 1.0), ws0 = normal(rng, {layers, d, d}, 0.3);

  // A loop over layers: one scan equation whose body is traced once.
  auto loss = [](fy::Tensor x, fy::Tensor ws) {      // ws: [layers, d, d]
    auto r = fy::scan([](fy::Tensor h, fy::Tensor w) {
      return std::pair{fy::tanh(fy::matmul(h, w)), fy::Tensor{}};   // (carry, no per-step output)
    }, x, ws);
    return fy::sum(r.carry);
  };
  auto step = fy::jit([&](fy::Tensor x, fy::Tensor ws) { return fy::grad(loss, fy::argnums<1>)(x, ws); });

  // The same loop unrolled, for reference.
  auto unrolled = fy::jit([&](fy::Tensor x, fy::Tensor ws) {
    return fy::grad([&](fy::Tensor h, fy::Tensor w) {
      for (int l = 0; l < layers; ++l)
        h = fy::tanh(fy::matmul(h, fy::reshape(fy::slice(w, {l, 0, 0}, {l + 1, d, d}), {d, d})));
      return fy::sum(h);
    }, fy::argnums<1>)(x, ws);
  });
  const std::string text = step.lower(x0, ws0).as_text();
  size_t scans = 0;
  for (size_t at = text.find("= scan"); at != std::string::npos; at = text.find("= scan", at + 1)) ++scans;
  check(scans == 2, "grad of a scan is a forward scan and a reverse scan");
  std::vector<float> g = step(x0, ws0)[0].to_vector<float>(), want = unrolled(x0, ws0)[0].to_vector<float>();
  double worst = 0;
  for (size_t i = 0; i < g.size(); ++i) worst = std::max(worst, double(std::abs(g[i] - want[i])));
  check(g.size() == want.size() && worst < 1e-5, "the scan's gradient is the unrolled loop's");
}

// ---- Model building blocks -----------------------------------------------------------------------

void model_building_blocks() {
  const int vocab = 16, seq = 8, width = 12;
  std::mt19937 rng(5);
  std::vector<int32_t> token_ids(seq), label_ids(seq);
  for (int i = 0; i < seq; ++i) token_ids[i] = i % vocab, label_ids[i] = (i + 1) % vocab;
  fy::Array embed = normal(rng, {vocab, width}, 0.5), pos = normal(rng, {seq, width}, 0.1);
  fy::Array tokens = fy::Array::from(token_ids, {seq}), labels = fy::Array::from(label_ids, {seq});

  auto forward = [](fy::Tensor embed, fy::Tensor pos, fy::Tensor scale, fy::Tensor bias, fy::Tensor key,
                    fy::Tensor tokens, fy::Tensor labels) {
    fy::Tensor x = fy::take(embed, tokens, 0) + pos;                    // gather rows (jnp.take)
    fy::Tensor h = fy::nn::layer_norm(x, scale, bias);                  // relu gelu silu softmax log_softmax
    fy::Tensor s = fy::matmul(h, fy::transpose(h, {1, 0}));             // [seq, seq]
    fy::Tensor p = fy::nn::dropout(key, 0.1, fy::nn::softmax(s, -1));   // logsumexp rms_norm cross_entropy
    fy::Tensor logits = fy::matmul(fy::matmul(p, h), fy::transpose(embed, {1, 0}));  // [seq, vocab]
    return fy::mean(fy::nn::cross_entropy(logits, labels));             // per-example, i32 labels
  };

  auto step = fy::jit([&](fy::Tensor embed, fy::Tensor pos, fy::Tensor scale, fy::Tensor bias, fy::Tensor key,
                          fy::Tensor tokens, fy::Tensor labels) {
    return fy::value_and_grad(forward)(embed, pos, scale, bias, key, tokens, labels);
  });
  auto [loss, grad] = step(embed, pos, fy::ones({width}), fy::zeros({width}), fy::random::key_data(0), tokens, labels)
                          .as<fy::Array, fy::Array>();
  bool finite = std::isfinite(scalar(loss));
  for (float v : grad.to_vector<float>()) finite = finite && std::isfinite(v);
  check(finite && grad.shape() == embed.shape(), "a small transformer-like step runs and has finite gradients");
}

// ---- Control flow and custom gradients -----------------------------------------------------------

void control_flow() {
  auto f = [](fy::Tensor x) {
    fy::Tensor y = fy::cond(fy::sum(x) > 0.0, [](fy::Tensor v) { return fy::sin(v); },
                            [](fy::Tensor v) { return -v; }, x);
    return fy::sum(fy::fori_loop(0, 3, [](fy::Tensor i, fy::Tensor c) { return c * 2.0; }, y));
  };
  auto clipped_sin = fy::custom_vjp(
      [](fy::Tensor x) { return fy::sin(x); },                                         // f
      [](fy::Tensor x) { return std::pair{fy::sin(x), fy::cos(x)}; },                   // fwd: (f(x), residuals)
      [](fy::Tensor cos_x, fy::Tensor g) { return fy::clamp(-1.0, g * cos_x, 1.0); });  // bwd(residuals, g)
  auto grads = fy::jit([&](fy::Tensor x) {
    return std::pair{fy::grad(f)(x), fy::grad([&](fy::Tensor v) { return fy::sum(clipped_sin(v) * 5.0); })(x)};
  });

  fy::Array x = fy::Array::from(std::vector<float>{0.5f, 1.0f}, {2});
  auto [gf, gc] = grads(x).as<fy::Array, fy::Array>();
  std::vector<float> a = gf.to_vector<float>(), b = gc.to_vector<float>();
  // sum(x) > 0: the gradient of 8 * sum(sin(x)) is 8 cos(x); the custom rule clips 5 cos(x) to 1.
  check(std::abs(a[0] - 8 * std::cos(0.5f)) < 1e-5 && std::abs(a[1] - 8 * std::cos(1.0f)) < 1e-5,
        "cond and fori_loop differentiate");
  check(b[0] == 1.0f && b[1] == 1.0f, "custom_vjp's backward rule is used");
}

// ---- The program as text -------------------------------------------------------------------------

void program_as_text() {
  auto f = fy::jit([](fy::Tensor x, fy::Tensor s) {
    fy::Tensor y = fy::sin(x);
    fy::Tensor scaled = fy::checkpoint_name(y * fy::device_put(s, fy::MemoryKind::device), "scaled");
    return fy::sum(scaled);
  });
  fy::Lowered lowered = f.lower(fy::ShapeDtype{{2, 3}}, fy::ShapeDtype{{3}, fy::DType::f32, fy::MemoryKind::pinned_host});
  std::cout << lowered.as_text();
  check(fy::parse_program(lowered.as_text()).as_text() == lowered.as_text(), "the text parses back to itself");
}

}  // namespace

int main() {
  training_with_trees();
  gradients_and_loops();
  model_building_blocks();
  control_flow();
  program_as_text();
  if (failures) std::printf("%d checks failed\n", failures);
  return failures ? 1 : 0;
}
