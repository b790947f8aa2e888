// The examples of docs/guide/memory.md ("Memory and offload"), each a function that checks what the
// page says of it, figures included. The page quotes the parts between the checks; the
// docs.snippets test checks that every quoted block is still in this file, and docs.memory runs it.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
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

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

constexpr int64_t MiB = 1 << 20;

// A two-layer step: the loss and the gradients of the weights.
auto two_layers = [](fy::Tensor x, std::vector<fy::Tensor> params) {
  return fy::grad([&](std::vector<fy::Tensor> w) {
    fy::Tensor h = fy::tanh(fy::matmul(fy::tanh(fy::matmul(x, w[0])), w[1]));
    return fy::sum(h * h);
  })(params);
};

void memory_before_running() {
  auto step = fy::jit(two_layers);
  fy::Array x = fy::ones({256, 64});
  std::vector<fy::Array> params{fy::full({64, 64}, 0.01), fy::full({64, 64}, 0.01)};

  fy::Compiled c = step.lower(x, params).compile({.device_memory_limit = 64 << 20});
  fy::MemoryStats m = c.memory_analysis();   // peak_memory_in_bytes, temp_size_in_bytes, host_temp_size_in_bytes, ...
  std::cout << c.memory_report();            // the stats and the largest buffers live at the device peak
  c(x, params);
  fy::ExecutionStats e = c.execution_stats(); // device_high_water_bytes == m.peak_memory_in_bytes

  check(e.device_high_water_bytes == m.peak_memory_in_bytes, "the measured high-water is the planned peak");
  check(m.peak_memory_in_bytes ==
            m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes - m.alias_size_in_bytes,
        "peak = argument + output + temp - alias");
}

// Constants after differentiation take no activation-sized memory.
void constants() {
  auto step = fy::jit([](fy::Tensor x) { return fy::grad([](fy::Tensor v) { return fy::sum(fy::tanh(v)); })(x); });
  fy::MemoryStats m = step.lower(fy::ShapeDtype{{1024, 128}}).compile().memory_analysis();
  std::printf("grad(sum(tanh(x))) at f32[1024,128]: peak %lld bytes\n", static_cast<long long>(m.peak_memory_in_bytes));
  check(m.peak_memory_in_bytes == 1 * MiB, "grad(sum(tanh(x))) at f32[1024,128] needs 1.0 MiB at its peak");
}

// Offloading the dots of a whole-model checkpoint keeps the device flat in depth.
void offloaded_dots() {
  auto peaks = [](const fy::Policy& policy, int layers) {
    auto step = fy::jit([&](fy::Tensor x, std::vector<fy::Tensor> ws) {
      return fy::grad([&](std::vector<fy::Tensor> w) {
        return fy::checkpoint([&](fy::Tensor h) {
          for (const fy::Tensor& wl : w) h = fy::tanh(fy::matmul(h, wl));
          return fy::sum(h * h);
        }, policy)(x);
      })(ws);
    });
    return step.lower(fy::ShapeDtype{{1024, 128}}, std::vector<fy::ShapeDtype>(layers, fy::ShapeDtype{{128, 128}}))
        .compile()
        .memory_analysis();
  };
  const fy::Policy offload = fy::policies::offload_dot_with_no_batch_dims(fy::MemoryKind::device, fy::MemoryKind::pinned_host);
  const fy::MemoryStats offloaded = peaks(offload, 8), offloaded16 = peaks(offload, 16);
  const fy::MemoryStats saved = peaks(fy::policies::dots_saveable, 8);
  std::printf("8 dense layers, batch 1024, width 128, one checkpoint: dots offloaded %.1f MiB (16 layers: %.1f MiB), "
              "dots saved %.1f MiB\n",
              double(offloaded.peak_memory_in_bytes) / MiB, double(offloaded16.peak_memory_in_bytes) / MiB,
              double(saved.peak_memory_in_bytes) / MiB);
  const int64_t activation = 1024 * 128 * 4, weights = 8 * 128 * 128 * 4;
  check(offloaded.peak_memory_in_bytes == activation + 2 * weights + 3 * activation && offloaded.peak_memory_in_bytes == 3 * MiB,
        "offloading the dots: the arguments, the outputs and three activations on the device (3.0 MiB)");
  check(offloaded16.peak_memory_in_bytes - offloaded.peak_memory_in_bytes == 2 * 8 * 128 * 128 * 4,
        "offloading the dots: flat in depth (16 layers add only their weights and gradients)");
  check(saved.peak_memory_in_bytes == 6 * MiB, "saving the dots needs 6.0 MiB");
}

void donation() {
  auto train_step = [](std::vector<fy::Tensor> params, std::vector<fy::Tensor> state, fy::Tensor batch) {
    std::vector<fy::Tensor> g = two_layers(batch, params), p, s;
    for (size_t i = 0; i < params.size(); ++i) {
      s.push_back(0.9 * state[i] + g[i]);
      p.push_back(params[i] - 0.01 * s.back());
    }
    return std::pair{p, s};
  };
  std::vector<fy::Array> params{fy::full({64, 64}, 0.01), fy::full({64, 64}, 0.01)};
  std::vector<fy::Array> state{fy::zeros({64, 64}), fy::zeros({64, 64})};
  fy::Array batch = fy::ones({256, 64});

  auto step = fy::jit(train_step, {.donate_argnums = {0, 1}});   // params, optimizer state
  std::vector<fy::Array> out = step.lower(params, state, batch).compile()(params, state, batch);
  // params and state are consumed; out holds the updated ones, in their buffers where the plan allows

  check(params[0].is_deleted() && state[1].is_deleted() && !batch.is_deleted(), "donated arguments are consumed");
  const std::vector<fy::ShapeDtype> two(2, fy::ShapeDtype{{64, 64}});
  const fy::MemoryStats m = step.lower(two, two, fy::ShapeDtype{{256, 64}}).compile().memory_analysis();
  check(out.size() == 4 && m.alias_size_in_bytes > 0,
        "updated parameters and state are written into donated buffers (alias_size_in_bytes)");
}

void see_the_memory() {
  auto layer = [](fy::Tensor x, fy::Tensor w) { return fy::tanh(fy::matmul(x, w)); };
  auto step_under = [&](const fy::Policy& policy) {
    return fy::jit([&](fy::Tensor x, std::vector<fy::Tensor> ws) {
      return fy::grad([&](std::vector<fy::Tensor> w) {
        fy::Tensor h = x;
        for (const fy::Tensor& wl : w) h = fy::checkpoint(layer, policy)(h, wl);
        return fy::sum(h);
      })(ws);
    });
  };
  const fy::Array x = fy::ones({512, 64});
  const std::vector<fy::Array> ws(4, fy::full({64, 64}, 0.1));
  fy::Compiled c = step_under(fy::policies::dots_saveable).lower(x, ws).compile();
  fy::Compiled saved = c;
  fy::Compiled offloaded =
      step_under(fy::policies::offload_dot_with_no_batch_dims(fy::MemoryKind::device, fy::MemoryKind::pinned_host))
          .lower(x, ws)
          .compile();

  c.save_memory_html("memory.html");                         // or std::string page = c.memory_html();
  fy::save_memory_html({{"saved", saved}, {"offloaded", offloaded}}, "compare.html",
                       {.device_memory_limit = 2 << 20});    // ferry/memory_html.h

  check(contains(read("memory.html"), "</html>"), "a plan's page is written");
  check(contains(read("compare.html"), "saved") && contains(read("compare.html"), "offloaded"), "two plans on one page");
  std::filesystem::remove("memory.html");
  std::filesystem::remove("compare.html");
}

}  // namespace

int main() {
  memory_before_running();
  constants();
  offloaded_dots();
  donation();
  see_the_memory();
  if (failures) std::printf("%d checks failed\n", failures);
  return failures ? 1 : 0;
}
