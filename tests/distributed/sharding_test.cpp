// Sharded training under `mpirun -np 2` (CTest distributed.sharding_np2): 10 AdamW steps of the
// shared GPT, each process on its part of the batch, under every ferry::optim::Sharding, against
// one process training on the whole batch (which every process also does itself); and the memory
// each process plans and measures.
#include <optional>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ferry/ferry.h"
#include "models.h"
#include "distributed/joined.h"
#include "support/memory_check.h"

namespace fy = ferry;
namespace opt = ferry::optim;
using Params = std::vector<fy::Tensor>;
using State = opt::AdamWState<Params>;

namespace {

const auto* const kJoined = ::testing::AddGlobalTestEnvironment(new fy::testing::Joined);

int n() { return fy::testing::process_count(); }
int me() { return fy::testing::process_index(); }

constexpr int kRowsPerProcess = 2, kSteps = 10;
constexpr double kLr = 3e-3;

fy::models::GptConfig config(int batch) {
  fy::models::GptConfig c;
  c.vocab = 16;
  c.d_model = 32;
  c.heads = 2;
  c.seq = 8;
  c.layers = 2;
  c.dropout = 0;
  c.batch = batch;
  return c;
}

fy::Array rows_of(const fy::Array& a, int64_t first, int64_t count) {
  const int64_t cols = a.shape()[1];
  std::vector<int32_t> v = a.to_vector<int32_t>();
  return fy::Array::from(std::vector<int32_t>(v.begin() + first * cols, v.begin() + (first + count) * cols), {count, cols});
}

std::vector<fy::Shape> shapes_of(const std::vector<fy::Array>& a) {
  std::vector<fy::Shape> s;
  for (const fy::Array& x : a) s.push_back(x.shape());
  return s;
}

struct Training {
  std::vector<float> losses;       // the whole batch's mean loss before each step
  std::vector<fy::Array> params;   // whole, after the last step
  fy::MemoryStats memory;          // of the step
  int64_t state_bytes = 0, param_bytes = 0;  // the step's arguments of each kind
};

int64_t bytes_of(const std::vector<fy::Array>& xs) {
  int64_t b = 0;
  for (const fy::Array& x : xs) b += static_cast<int64_t>(x.nbytes());
  return b;
}

// One process on the whole batch: plain AdamW.
Training single_process(const std::vector<fy::Array>& init, const fy::Array& tokens, const fy::Array& targets) {
  const fy::models::GptConfig c = config(kRowsPerProcess * n());
  auto step = fy::jit([c](Params p, State s, fy::Tensor tok, fy::Tensor tgt) {
    auto [loss, g] = fy::value_and_grad([&](Params q) { return fy::models::gpt_loss(q, tok, tgt, c, std::nullopt); })(p);
    auto [p2, s2] = opt::adamw(p, g, s, kLr);
    return std::tuple{loss, p2, s2};
  });
  Training r;
  std::vector<fy::Array> p = init;
  opt::AdamWState<std::vector<fy::Array>> s = opt::adamw_init(p);
  for (int i = 0; i < kSteps; ++i) {
    auto [loss, p2, s2] = step(p, s, tokens, targets);
    r.losses.push_back(loss.to_vector<float>()[0]);
    p = p2;
    s = s2;
  }
  r.params = p;
  return r;
}

// Every process on its rows, sharing the state as `sharding` says.
// With `options` (a limit), the parameters and state are donated, as a training loop donates them.
Training sharded(opt::Sharding sharding, const std::vector<fy::Array>& init, const fy::Array& tokens, const fy::Array& targets,
                 const std::optional<fy::CompileOptions>& options = std::nullopt) {
  const fy::models::GptConfig c = config(kRowsPerProcess);
  const std::vector<fy::Shape> shapes = shapes_of(init);
  const bool fsdp = sharding == opt::Sharding::parameters;
  auto step = fy::jit([c, shapes, fsdp, sharding](Params p, State s, fy::Tensor tok, fy::Tensor tgt) {
    auto loss_of = [&](Params q) {
      return fy::models::gpt_loss(fsdp ? opt::gather_params(q, shapes, "data") : q, tok, tgt, c, std::nullopt);
    };
    auto [loss, g] = fy::value_and_grad(loss_of)(p);
    auto [p2, s2] = opt::sharded_adamw(p, g, s, kLr, "data", sharding);
    return std::tuple{fy::pmean(loss, "data"), p2, s2};
  }, {.donate_argnums = options ? std::vector<int>{0, 1} : std::vector<int>{}});
  const fy::Array my_tokens = rows_of(tokens, kRowsPerProcess * me(), kRowsPerProcess);
  const fy::Array my_targets = rows_of(targets, kRowsPerProcess * me(), kRowsPerProcess);
  std::vector<fy::Array> p = fsdp ? opt::shard(init) : init;
  if (options)  // donated: the caller's arrays stay as they are
    for (fy::Array& x : p) x = fy::Array::from_bytes(x.data(), x.nbytes(), x.dtype(), x.shape());
  opt::AdamWState<std::vector<fy::Array>> s =
      sharding == opt::Sharding::replicated ? opt::adamw_init(p) : opt::adamw_init_sharded(init);
  Training r;
  r.state_bytes = bytes_of(s.mu) + bytes_of(s.nu);
  r.param_bytes = bytes_of(p);
  fy::Compiled compiled = step.lower(p, s, my_tokens, my_targets).compile(options.value_or(fy::CompileOptions{}));
  r.memory = compiled.memory_analysis();
  for (int i = 0; i < kSteps; ++i) {
    std::vector<fy::Array> args;
    for (const auto& x : p) args.push_back(x);
    args.push_back(s.count);
    for (const auto& x : s.mu) args.push_back(x);
    for (const auto& x : s.nu) args.push_back(x);
    args.push_back(my_tokens);
    args.push_back(my_targets);
    std::vector<fy::Array> out = fy::testing::run_checked(compiled, args);
    EXPECT_EQ(fy::testing::high_water_mismatch(compiled), "") << "process " << me() << " step " << i;
    size_t k = 0;
    r.losses.push_back(out[k++].to_vector<float>()[0]);
    for (auto& x : p) x = out[k++];
    s.count = out[k++];
    for (auto& x : s.mu) x = out[k++];
    for (auto& x : s.nu) x = out[k++];
  }
  if (fsdp) {  // the whole parameters, to compare: gathered once more
    auto whole = fy::jit([shapes](Params q) { return opt::gather_params(q, shapes, "data"); });
    r.params = whole.lower(p).compile().run(p);
  } else {
    r.params = p;
  }
  return r;
}

class Sharded : public testing::TestWithParam<opt::Sharding> {};

std::string name_of(opt::Sharding s) {
  switch (s) {
    case opt::Sharding::replicated: return "replicated";
    case opt::Sharding::optimizer_state: return "optimizer_state";
    case opt::Sharding::gradients: return "gradients";
    case opt::Sharding::parameters: return "parameters";
  }
  return "?";
}

// The losses before each of 10 steps and the parameters after them equal one process's on the
// whole batch: within 1e-5 of the loss and 2e-4 of each parameter's largest element (the processes
// sum their gradients in another order than one process sums its batch's, and AdamW divides by
// the square root of the second moment, which makes small gradients' rounding count).
TEST_P(Sharded, TenAdamWStepsEqualOneProcessOnTheWholeBatch) {
  const fy::models::GptConfig whole = config(kRowsPerProcess * n());
  const std::vector<fy::Array> init = fy::models::gpt_params(whole, 3);
  auto [tokens, targets] = fy::models::copy_task_batch(whole, 5);
  const Training want = single_process(init, tokens, targets);
  const Training got = sharded(GetParam(), init, tokens, targets);
  ASSERT_EQ(got.losses.size(), want.losses.size());
  for (size_t i = 0; i < want.losses.size(); ++i)
    EXPECT_NEAR(got.losses[i], want.losses[i], 1e-5 * std::abs(want.losses[i])) << "step " << i;
  EXPECT_LT(want.losses.back(), want.losses.front()) << "the model trains";
  for (size_t k = 0; k < want.params.size(); ++k) {
    std::vector<float> g = got.params[k].to_vector<float>(), w = want.params[k].to_vector<float>();
    ASSERT_EQ(g.size(), w.size());
    float scale = 1e-3f;
    for (float v : w) scale = std::max(scale, std::abs(v));
    for (size_t i = 0; i < w.size(); ++i)
      ASSERT_NEAR(g[i], w[i], 2e-4f * scale) << fy::models::gpt_param_names()[k] << " element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Every, Sharded,
                         testing::Values(opt::Sharding::replicated, opt::Sharding::optimizer_state,
                                         opt::Sharding::gradients, opt::Sharding::parameters),
                         [](const testing::TestParamInfo<opt::Sharding>& i) { return name_of(i.param); });

// Per process: the optimizer state is 1/N of the replicated one (up to the padding of each leaf to
// a multiple of N), and so are the parameters at rest under FSDP; the step's planned argument
// bytes say the same (the plan counts what each process holds).
TEST(ShardedMemory, StateAndParametersAtRestAreOneNth) {
  const fy::models::GptConfig whole = config(kRowsPerProcess * n());
  const std::vector<fy::Array> init = fy::models::gpt_params(whole, 3);
  auto [tokens, targets] = fy::models::copy_task_batch(whole, 5);
  const Training dp = sharded(opt::Sharding::replicated, init, tokens, targets);
  const Training zero2 = sharded(opt::Sharding::gradients, init, tokens, targets);
  const Training fsdp = sharded(opt::Sharding::parameters, init, tokens, targets);
  const int64_t padding_bound = 2 * static_cast<int64_t>(init.size()) * (n() - 1) * 4;  // < N elements a leaf
  EXPECT_LE(zero2.state_bytes, dp.state_bytes / n() + padding_bound);
  EXPECT_GE(zero2.state_bytes, dp.state_bytes / n());
  EXPECT_EQ(fsdp.state_bytes, zero2.state_bytes);
  EXPECT_LE(fsdp.param_bytes, dp.param_bytes / n() + padding_bound / 2);
  EXPECT_EQ(zero2.param_bytes, dp.param_bytes);
  // The plan's arguments are what each process passes: the state's share shows there too.
  EXPECT_EQ(dp.memory.argument_size_in_bytes - zero2.memory.argument_size_in_bytes, dp.state_bytes - zero2.state_bytes);
  EXPECT_EQ(dp.memory.argument_size_in_bytes - fsdp.memory.argument_size_in_bytes,
            dp.state_bytes - fsdp.state_bytes + dp.param_bytes - fsdp.param_bytes);
}

// Under a device limit below what each process's arguments need, the planner keeps part of the
// sharded AdamW state in host memory between steps (ZeRO-Offload, as few arrays as fit): every
// process plans alike, and the ten steps are those of the unlimited run, bit for bit.
TEST(ShardedMemory, UnderALimitPartOfTheShardedStateWaitsInHostMemory) {
  const fy::models::GptConfig whole = config(kRowsPerProcess * n());
  const std::vector<fy::Array> init = fy::models::gpt_params(whole, 3);
  auto [tokens, targets] = fy::models::copy_task_batch(whole, 5);
  const Training unlimited = sharded(opt::Sharding::optimizer_state, init, tokens, targets, fy::CompileOptions{});
  const int64_t limit = unlimited.memory.peak_memory_in_bytes - unlimited.state_bytes / 2;
  const Training limited = sharded(opt::Sharding::optimizer_state, init, tokens, targets,
                                   fy::CompileOptions{.device_memory_limit = limit, .fit_to_limit = true});
  EXPECT_LE(limited.memory.peak_memory_in_bytes, limit);
  EXPECT_GT(limited.memory.host_argument_size_in_bytes, 0);
  EXPECT_LT(limited.memory.host_argument_size_in_bytes, unlimited.state_bytes) << "as few as fit";
  EXPECT_EQ(limited.losses, unlimited.losses);
  for (size_t k = 0; k < init.size(); ++k) EXPECT_TRUE(limited.params[k].equals(unlimited.params[k])) << k;
}

}  // namespace

namespace {

// Under FSDP a gathered parameter is one more value to plan: inside a checkpoint, the policy
// decides whether the backward pass keeps it or gathers it again (a recomputed all_gather), and
// under a device limit the automatic planner chooses; the gradients are the same either way.
std::vector<fy::Array> fsdp_grads(const std::optional<fy::Policy>& policy, int64_t limit, std::string* text,
                                  int64_t* peak) {
  constexpr int kLayers = 6;
  const std::vector<fy::Shape> shape{{64, 64}};
  std::vector<fy::Array> whole;
  for (int i = 0; i < kLayers; ++i) {
    std::vector<float> v(64 * 64);
    for (size_t k = 0; k < v.size(); ++k) v[k] = 0.02f * static_cast<float>((k * 7 + static_cast<size_t>(i) * 13) % 11) - 0.1f;
    whole.push_back(fy::Array::from(v, shape[0]));
  }
  const std::vector<fy::Array> shards = opt::shard(whole);
  const fy::Array x = fy::full({16, 64}, 0.1 * (me() + 1));
  // One layer: its parameter gathered from the shards where it is read, inside the layer's checkpoint.
  auto layer = [shape](std::vector<fy::Tensor> in) {
    fy::Tensor w = opt::gather_params(std::vector<fy::Tensor>{in[1]}, shape, "data")[0];
    return std::vector<fy::Tensor>{fy::tanh(fy::matmul(in[0], w))};
  };
  // The loss too: the forward pass runs (gathers) before the backward pass needs the parameters.
  auto step = fy::jit([&](Params p, fy::Tensor xs) {
    auto [loss, g] = fy::value_and_grad([&](Params q) {
      fy::Tensor h = xs;
      for (const fy::Tensor& shard : q)
        h = (policy ? fy::checkpoint(layer, *policy)(std::vector<fy::Tensor>{h, shard}) : layer({h, shard}))[0];
      return fy::sum(h * h);
    })(p);
    g.push_back(loss);
    return g;
  });
  fy::Compiled c = step.lower(shards, x).compile({.device_memory_limit = limit});
  if (text) *text = c.as_text();
  if (peak) *peak = c.memory_analysis().peak_memory_in_bytes;
  std::vector<fy::Array> args = shards;
  args.push_back(x);
  std::vector<fy::Array> out = fy::testing::run_checked(c, args);
  EXPECT_EQ(fy::testing::high_water_mismatch(c), "") << "process " << me();
  return out;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

void expect_same(const std::vector<fy::Array>& got, const std::vector<fy::Array>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < want.size(); ++k) {
    std::vector<float> g = got[k].to_vector<float>(), w = want[k].to_vector<float>();
    for (size_t i = 0; i < w.size(); ++i) ASSERT_NEAR(g[i], w[i], 1e-5f * (1 + std::abs(w[i]))) << what << " " << k << "/" << i;
  }
}

TEST(Fsdp, AGatheredParameterIsKeptOrGatheredAgainByThePolicy) {
  std::string kept, again;
  int64_t kept_peak = 0, again_peak = 0;
  const std::vector<fy::Array> want = fsdp_grads(std::nullopt, 0, &kept, &kept_peak);
  const std::vector<fy::Array> regathered = fsdp_grads(fy::policies::nothing_saveable, 0, &again, &again_peak);
  expect_same(regathered, want, "nothing_saveable");
  // Gathered for the forward pass, and again (recomputed) for the backward pass: twice as many.
  const size_t gathers_kept = count_of(kept, "all_gather_start"), gathers_again = count_of(again, "all_gather_start");
  EXPECT_EQ(gathers_kept, 6u) << kept;
  EXPECT_EQ(gathers_again, 12u) << again;
  EXPECT_LT(again_peak, kept_peak) << "gathering again lets each gathered parameter go after its layer's forward pass";
  // automatic, under a limit between the two peaks, fits and gives the same gradients.
  const int64_t limit = (kept_peak + again_peak) / 2;
  std::string chosen;
  int64_t chosen_peak = 0;
  expect_same(fsdp_grads(fy::policies::automatic, limit, &chosen, &chosen_peak), want, "automatic");
  EXPECT_LE(chosen_peak, limit);
}

}  // namespace
