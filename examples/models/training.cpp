#include "training.h"

#include <algorithm>
#include <chrono>

namespace ferry::models {

std::vector<std::string> gpt_names() { return {"query_proj", "key_proj", "value_proj", "out_proj", "mlpwi", "mlpwo"}; }
std::vector<std::string> scan_mlp_names() { return {"x"}; }

std::vector<NamedPolicy> benchmark_policies(const std::vector<std::string>& names) {
  using namespace policies;
  return {{"no checkpoint", std::nullopt},
          {"nothing_saveable", nothing_saveable},
          {"dots_saveable", dots_saveable},
          {"dots_with_no_batch_dims_saveable", dots_with_no_batch_dims_saveable},
          {"offload_dot_with_no_batch_dims", offload_dot_with_no_batch_dims(MemoryKind::device, MemoryKind::pinned_host)},
          {"names saved", save_only_these_names(names)},
          {"names offloaded", save_and_offload_only_these_names({}, names, MemoryKind::device, MemoryKind::pinned_host)}};
}

Lowered lower_gpt_train_step(const GptConfig& c, const std::optional<Policy>& policy, double learning_rate,
                             bool donate) {
  auto step = jit(
      [c, policy, learning_rate](std::vector<Tensor> p, std::vector<Tensor> m, std::vector<Tensor> v, Tensor count,
                                 Tensor tokens, Tensor targets) {
        auto [loss, grads] =
            value_and_grad([&](std::vector<Tensor> q) { return gpt_loss(q, tokens, targets, c, policy); })(p);
        optim::AdamResult r = optim::adam(p, grads, m, v, count, learning_rate);
        return std::tuple{loss, r.params, r.m, r.v, r.step};
      },
      JitOptions{.name = "gpt_train_step", .donate_argnums = donate ? std::vector<int>{0, 1, 2, 3} : std::vector<int>{}});
  std::vector<ShapeDtype> params = gpt_param_specs(c);
  ShapeDtype tokens{{c.batch, c.seq}, DType::i32};
  return step.lower(params, params, params, ShapeDtype{{}}, tokens, tokens);
}

Compiled compile_gpt_train_step(const GptConfig& c, const std::optional<Policy>& policy, int64_t device_limit,
                                double learning_rate, bool donate) {
  return lower_gpt_train_step(c, policy, learning_rate, donate).compile({.device_memory_limit = device_limit});
}

Lowered lower_scan_mlp_grad(const ScanMlpConfig& c, const std::optional<Policy>& policy) {
  auto step = jit(
      [policy](Tensor x, std::vector<Tensor> w) {
        return value_and_grad([&](std::vector<Tensor> q) { return scan_mlp_loss(x, q, policy); })(w);
      },
      "scan_mlp_grad");
  return step.lower(ShapeDtype{{c.batch, c.width}}, scan_mlp_param_specs(c));
}

Compiled compile_scan_mlp_grad(const ScanMlpConfig& c, const std::optional<Policy>& policy, int64_t device_limit) {
  return lower_scan_mlp_grad(c, policy).compile({.device_memory_limit = device_limit});
}

GptTrainer::GptTrainer(const GptConfig& c, Compiled compiled, uint32_t seed)
    : config(c), step(std::move(compiled)), params(gpt_params(c, seed)), count(zeros({})) {
  for (const Array& p : params) {
    m.push_back(zeros(p.shape()));
    v.push_back(zeros(p.shape()));
  }
}

float GptTrainer::train(const Array& tokens, const Array& targets, const std::string& trace_path) {
  std::vector<Array> args = params;
  args.insert(args.end(), m.begin(), m.end());
  args.insert(args.end(), v.begin(), v.end());
  args.push_back(count);
  args.push_back(tokens);
  args.push_back(targets);
  std::vector<Array> out = trace_path.empty() ? step.run(args) : step.run_traced(args, trace_path);
  const size_t n = params.size();
  params.assign(out.begin() + 1, out.begin() + 1 + static_cast<std::ptrdiff_t>(n));
  m.assign(out.begin() + 1 + static_cast<std::ptrdiff_t>(n), out.begin() + 1 + static_cast<std::ptrdiff_t>(2 * n));
  v.assign(out.begin() + 1 + static_cast<std::ptrdiff_t>(2 * n), out.begin() + 1 + static_cast<std::ptrdiff_t>(3 * n));
  count = out.back();
  return out[0].to_vector<float>()[0];
}

namespace {
std::string config_string(const GptConfig& c) {
  return "vocab=" + std::to_string(c.vocab) + " d_model=" + std::to_string(c.d_model) + " heads=" +
         std::to_string(c.heads) + " seq=" + std::to_string(c.seq) + " batch=" + std::to_string(c.batch) +
         " layers=" + std::to_string(c.layers);
}

// The run's arrays by the names a checkpoint gives them.
NamedArrays named_state(const GptTrainer& t) {
  const std::vector<std::string> names = gpt_param_names();
  NamedArrays arrays{{"adam.count", t.count}};
  for (size_t i = 0; i < names.size(); ++i) {
    arrays.emplace("params." + names[i], t.params[i]);
    arrays.emplace("adam.m." + names[i], t.m[i]);
    arrays.emplace("adam.v." + names[i], t.v[i]);
  }
  return arrays;
}
}  // namespace

void GptTrainer::save(const std::string& path, int steps) const {
  ferry::save(path, named_state(*this),
              {{"step", std::to_string(steps)}, {"model", "ferry demo gpt"}, {"config", config_string(config)}});
}

int GptTrainer::load(const std::string& path) {
  Metadata metadata = load_metadata(path);
  auto field = [&](const std::string& key) {
    auto it = metadata.find(key);
    if (it == metadata.end())
      throw Error(ErrorCode::invalid_argument, path + " is not a checkpoint of ferry demo (no \"" + key + "\" metadata)");
    return it->second;
  };
  if (field("config") != config_string(config))
    throw Error(ErrorCode::invalid_argument,
                path + " holds a GPT of another configuration (" + field("config") + ", not " + config_string(config) + ")");
  int steps = 0;
  try {
    steps = std::stoi(field("step"));
  } catch (const std::exception&) {
    throw Error(ErrorCode::invalid_argument, path + ": the \"step\" metadata is not a number");
  }
  // from_named checks each array's dtype and shape against the ones this trainer holds.
  NamedArrays loaded = from_named(ferry::load(path), named_state(*this));
  const std::vector<std::string> names = gpt_param_names();
  count = loaded.at("adam.count");
  for (size_t i = 0; i < names.size(); ++i) {
    params[i] = loaded.at("params." + names[i]);
    m[i] = loaded.at("adam.m." + names[i]);
    v[i] = loaded.at("adam.v." + names[i]);
  }
  return steps;
}

double timed_step(const Compiled& c, const std::vector<Array>& args) {
  std::vector<Array> copies;
  for (const Array& a : args) copies.push_back(Array::from_bytes(a.data(), a.nbytes(), a.dtype(), a.shape(), a.memory_kind()));
  auto start = std::chrono::steady_clock::now();
  c.run(copies);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

StepReport measure_step(const std::string& policy, const Compiled& c, const std::vector<Array>& args, int repeats) {
  StepReport r;
  r.policy = policy;
  MemoryStats m = c.memory_analysis();
  CostStats cost = c.cost_analysis();
  r.device_peak = m.peak_memory_in_bytes;
  r.temp_bytes = m.temp_size_in_bytes;
  r.host_bytes = m.host_peak_memory_in_bytes;
  r.recompute_flops = cost.recompute_flops;
  r.copy_bytes = cost.bytes_to_host + cost.bytes_to_device;
  std::vector<double> times;
  timed_step(c, args);  // warm up
  for (int i = 0; i < repeats; ++i) times.push_back(timed_step(c, args));
  std::sort(times.begin(), times.end());
  r.step_seconds = times.empty() ? 0 : times[times.size() / 2];
  return r;
}

}  // namespace ferry::models
