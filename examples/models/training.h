// Training steps of the models as single compiled programs (loss, gradients and an Adam update),
// the policies the demo and the benchmarks compare, and measuring one compiled step.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models.h"

namespace ferry::models {

// A checkpoint policy by name; no policy = no checkpoint (everything the backward pass reads is
// kept, as without rematerialization).
struct NamedPolicy {
  std::string name;
  std::optional<Policy> policy;
};
// no checkpoint, nothing_saveable, dots_saveable, dots_with_no_batch_dims_saveable,
// offload_dot_with_no_batch_dims, names saved, names offloaded (the model's tagged names).
std::vector<NamedPolicy> benchmark_policies(const std::vector<std::string>& names);
std::vector<std::string> gpt_names();       // query_proj ... mlpwo
std::vector<std::string> scan_mlp_names();  // x

// Adam training step of gpt: (params, m, v, step, tokens, targets) -> (loss, params, m, v, step).
// With `donate`, the call consumes params, m, v and step (jit's donate_argnums) and writes their
// updates into the same buffers, so they are not held twice during the step.
Lowered lower_gpt_train_step(const GptConfig& c, const std::optional<Policy>& policy, double learning_rate = 3e-3,
                             bool donate = true);
Compiled compile_gpt_train_step(const GptConfig& c, const std::optional<Policy>& policy, int64_t device_limit = 0,
                                double learning_rate = 3e-3, bool donate = true);
// Gradient step of scan_mlp: (x, w1, w2) -> (loss, dw1, dw2).
Lowered lower_scan_mlp_grad(const ScanMlpConfig& c, const std::optional<Policy>& policy);
Compiled compile_scan_mlp_grad(const ScanMlpConfig& c, const std::optional<Policy>& policy, int64_t device_limit = 0);

// The state of an Adam run of gpt, and one step of it.
struct GptTrainer {
  GptConfig config;
  Compiled step;
  std::vector<Array> params, m, v;
  Array count;
  GptTrainer(const GptConfig& c, Compiled compiled, uint32_t seed);
  // Returns the loss before the update. With a trace_path, the step also writes its timeline there
  // (Compiled::run_traced), which the step's memory page then shows beside the plan.
  float train(const Array& tokens, const Array& targets, const std::string& trace_path = "");
  // A safetensors checkpoint of the run after `steps` updates: "params.<name>", "adam.m.<name>",
  // "adam.v.<name>" (gpt_param_names()), "adam.count", and the step and configuration as metadata.
  void save(const std::string& path, int steps) const;
  // Restores a checkpoint save() wrote (INVALID_ARGUMENT if it is of another configuration) and
  // returns its step count.
  int load(const std::string& path);
};

// What one compiled step costs: planned memory, the cost model's recompute and copies, and the
// median wall time of `repeats` runs (each on fresh copies of `args`, made untimed, since a step
// may consume donated arguments).
struct StepReport {
  std::string policy;
  bool fits = true;
  std::string error;  // when it does not fit (RESOURCE_EXHAUSTED) or fails
  int64_t device_peak = 0, temp_bytes = 0, host_bytes = 0, copy_bytes = 0;
  double recompute_flops = 0, step_seconds = 0;
};
StepReport measure_step(const std::string& policy, const Compiled& c, const std::vector<Array>& args, int repeats);
// One run of c on fresh copies of args (made untimed, since a step may consume donated arguments):
// its wall seconds.
double timed_step(const Compiled& c, const std::vector<Array>& args);

}  // namespace ferry::models
