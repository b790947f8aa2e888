// `mpirun -np N ferry demo --processes`: the demo's GPT trained by N processes, each on 1/N of every
// batch, sharing the training state as --sharding says (ferry/sharding.h). Process 0 reports what
// one process plans and measures, beside the cost model's view of the exchanges.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <fstream>

#include <fmt/format.h>

#include "demo.h"
#include "ferry/ferry.h"
#include "models.h"

namespace ferry::tools {
namespace {

namespace fm = ferry::models;
using Params = std::vector<Tensor>;

Array rows_of(const Array& a, int64_t first, int64_t count) {
  const int64_t cols = a.shape()[1];
  std::vector<int32_t> v = a.to_vector<int32_t>();
  return Array::from(std::vector<int32_t>(v.begin() + first * cols, v.begin() + (first + count) * cols), {count, cols});
}

std::string mib(int64_t bytes) { return fmt::format("{:.2f} MiB", static_cast<double>(bytes) / (1 << 20)); }

// Seconds the compute lane waited in collectives' dones, from a Chrome trace run_traced wrote.
double waited_seconds(const std::string& trace_path) {
  std::ifstream in(trace_path);
  nlohmann::json trace = nlohmann::json::parse(in);
  double us = 0;
  for (const auto& e : trace["traceEvents"])
    if (e.value("ph", "") == "X" && e.value("tid", -1) == 0 && e.value("name", "").rfind("wait ", 0) == 0)
      us += e["dur"].get<double>();
  return us * 1e-6;
}

}  // namespace

optim::Sharding parse_sharding(const std::string& name) {
  if (name == "replicated") return optim::Sharding::replicated;
  if (name == "optimizer_state" || name == "zero1") return optim::Sharding::optimizer_state;
  if (name == "gradients" || name == "zero2") return optim::Sharding::gradients;
  if (name == "parameters" || name == "fsdp") return optim::Sharding::parameters;
  throw Error(ErrorCode::invalid_argument,
              fmt::format("--sharding {}: one of replicated, optimizer_state (zero1), gradients (zero2), "
                          "parameters (fsdp)",
                          name));
}

int run_demo_processes(const DemoOptions& options) {
  const optim::Sharding sharding = parse_sharding(options.sharding);
  distributed::initialize();
  const int n = distributed::process_count(), me = distributed::process_index();
  const fm::GptConfig whole{.vocab = 32, .d_model = 128, .heads = 4, .seq = 64, .batch = 8, .layers = 4};
  if (whole.batch % n != 0)
    throw Error(ErrorCode::invalid_argument,
                fmt::format("demo --processes: the batch of {} rows does not split over {} processes", whole.batch, n));
  fm::GptConfig part = whole;
  part.batch = whole.batch / n;
  auto say = [me](const std::string& s) {
    if (me == 0) std::fputs(s.c_str(), stdout), std::fflush(stdout);
  };
  say(fmt::format("ferry demo --processes: {} processes train a GPT to copy, each on {} of the {} rows of every "
                  "batch; training state shared as '{}'\n",
                  n, part.batch, whole.batch, options.sharding));
  say(fmt::format("machine: {}\n", machine_info().summary()));

  const std::vector<Array> init = fm::gpt_params(whole, 1);
  std::vector<Shape> shapes;
  for (const Array& a : init) shapes.push_back(a.shape());
  const bool fsdp = sharding == optim::Sharding::parameters;
  auto step = jit(
      [part, shapes, fsdp, sharding](Params p, optim::AdamWState<Params> s, Tensor tok, Tensor tgt) {
        auto loss_of = [&](Params q) {
          return fm::gpt_loss(fsdp ? optim::gather_params(q, shapes, "data") : q, tok, tgt, part, std::nullopt);
        };
        auto [loss, g] = value_and_grad(loss_of)(p);
        auto [p2, s2] = optim::sharded_adamw(p, g, s, 3e-3, "data", sharding);
        return std::tuple{pmean(loss, "data"), p2, s2};
      },
      "gpt_data_parallel_step");
  std::vector<Array> params = fsdp ? optim::shard(init) : init;
  optim::AdamWState<std::vector<Array>> state =
      sharding == optim::Sharding::replicated ? optim::adamw_init(params) : optim::adamw_init_sharded(init);
  auto batch = [&](int step_index) {
    auto [tk, tg] = fm::copy_task_batch(whole, static_cast<uint32_t>(step_index + 1));
    return std::pair{rows_of(tk, me * part.batch, part.batch), rows_of(tg, me * part.batch, part.batch)};
  };
  auto [tk0, tg0] = batch(0);
  Compiled c = step.lower(params, state, tk0, tg0).compile(calibrated_options());
  const MemoryStats planned = c.memory_analysis();
  const CostStats cost = c.cost_analysis();
  say(fmt::format("per process, planned: device peak {} (arguments {}, of which optimizer state {}); "
                  "{} sent in collectives per step; estimated step {:.1f} ms, {:.1f} ms of it waiting for them\n\n",
                  mib(planned.peak_memory_in_bytes), mib(planned.argument_size_in_bytes),
                  mib([&] {
                    int64_t b = 0;
                    for (const Array& a : state.mu) b += static_cast<int64_t>(a.nbytes());
                    for (const Array& a : state.nu) b += static_cast<int64_t>(a.nbytes());
                    return b;
                  }()),
                  mib(cost.bytes_exchanged), cost.estimated_seconds * 1e3, cost.exposed_collective_seconds * 1e3));
  float first = 0, last = 0;
  std::vector<float> recent;
  double seconds = 0, waited = 0;  // waited: in the traced steps (the last five)
  const int traced = std::min(5, options.steps);
  const std::string trace = fmt::format("ferry-demo-processes-{}.trace.json", me);
  for (int i = 0; i < options.steps; ++i) {
    auto [tk, tg] = batch(i);
    std::vector<Array> args = params;
    args.push_back(state.count);
    args.insert(args.end(), state.mu.begin(), state.mu.end());
    args.insert(args.end(), state.nu.begin(), state.nu.end());
    args.push_back(tk);
    args.push_back(tg);
    const auto start = std::chrono::steady_clock::now();
    const bool tracing = i >= options.steps - traced;
    std::vector<Array> out = tracing ? c.run_traced(args, trace) : c.run(args);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (tracing) waited += waited_seconds(trace);
    size_t k = 0;
    const float loss = out[k++].to_vector<float>()[0];
    for (auto& x : params) x = out[k++];
    state.count = out[k++];
    for (auto& x : state.mu) x = out[k++];
    for (auto& x : state.nu) x = out[k++];
    if (i == 0) first = loss;
    recent.push_back(loss);
    if (recent.size() > 10) recent.erase(recent.begin());
    if (options.print_losses) say(fmt::format("loss at step {}: {:.9g}\n", i + 1, loss));
  }
  for (float l : recent) last += l / static_cast<float>(recent.size());
  const ExecutionStats stats = c.execution_stats();
  say(fmt::format("loss {:.4f} -> {:.4f} (mean of the last ten; {:.2f}x lower) in {} steps, {:.1f} ms a step\n", first,
                  last, first / last, options.steps, seconds / options.steps * 1e3));
  say(fmt::format("process 0 measured: device high-water {} (planned {}); {} sent in the last step's collectives "
                  "(counted as each started; planned {}); a step waited {:.2f} ms for "
                  "collectives (mean of the last {} steps, from their timelines; the last one's, a track per process: "
                  "ferry-demo-processes-<index>.trace.json)\n",
                  mib(stats.device_high_water_bytes), mib(planned.peak_memory_in_bytes), mib(stats.bytes_exchanged),
                  mib(cost.bytes_exchanged), waited / traced * 1e3, traced));
  if (!options.json_path.empty() && me == 0) {
    int64_t grad_bytes = 0;
    for (const Array& a : init) grad_bytes += static_cast<int64_t>(a.nbytes());
    nlohmann::json j = {{"processes", n},
                        {"sharding", options.sharding},
                        {"steps", options.steps},
                        {"step_ms", seconds / options.steps * 1e3},
                        {"waited_ms", waited / traced * 1e3},
                        {"estimated_step_ms", cost.estimated_seconds * 1e3},
                        {"estimated_waited_ms", cost.exposed_collective_seconds * 1e3},
                        {"bytes_exchanged", cost.bytes_exchanged},
                        {"bytes_exchanged_counted", stats.bytes_exchanged},
                        {"gradient_bytes", grad_bytes},
                        {"device_peak", planned.peak_memory_in_bytes},
                        {"device_high_water", stats.device_high_water_bytes},
                        {"first_loss", first},
                        {"last_loss", last},
                        {"machine", machine_info().summary()}};
    std::ofstream(options.json_path) << j.dump() << "\n";
  }
  const bool ok = stats.device_high_water_bytes == planned.peak_memory_in_bytes &&
                  stats.bytes_exchanged == cost.bytes_exchanged && first / last >= options.min_factor;
  if (!ok)
    say(fmt::format("demo failed: the loss fell {:.2f}x (wanted {:.2f}x), or the high-water mark or the bytes sent "
                    "missed the plan\n",
                    first / last, options.min_factor));
  return ok ? 0 : 1;
}

}  // namespace ferry::tools
