// The examples of docs/guide/planner.md ("The planner"): policies::automatic and fit_to_limit, and
// the page's table of plans, which this program computes and prints (docs.snippets checks that the
// page's table is what it prints, and that the quoted code is still here; docs.planner runs it).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <ferry/ferry.h>

namespace fy = ferry;

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
  if (!ok) ++failures;
}

constexpr int kLayers = 8, kBatch = 1024, kWidth = 128;
constexpr double MiB = 1 << 20;

fy::Tensor layer(fy::Tensor h, fy::Tensor w) { return fy::tanh(fy::matmul(h, w)); }

// x, and the weights: 8 arrays, or one stacked [layers, width, width] for the scan.
std::vector<fy::Array> arguments(bool stacked) {
  std::vector<float> x(kBatch * kWidth), w(kLayers * kWidth * kWidth);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * float(i % 1000));
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.09f * std::cos(0.11f * float(i % 977));
  std::vector<fy::Array> args{fy::Array::from(x, {kBatch, kWidth})};
  if (stacked) {
    args.push_back(fy::Array::from(w, {kLayers, kWidth, kWidth}));
  } else {
    for (int l = 0; l < kLayers; ++l)
      args.push_back(fy::Array::from(std::vector<float>(w.begin() + l * kWidth * kWidth, w.begin() + (l + 1) * kWidth * kWidth),
                                     {kWidth, kWidth}));
  }
  return args;
}

fy::Tensor layers(fy::Tensor x, std::vector<fy::Tensor> ws) {
  fy::Tensor h = x;
  for (const fy::Tensor& w : ws) h = layer(h, w);
  return h;
}

// The gradient of sum(h * h) after 8 dense tanh layers with respect to the weights: the layers
// unrolled, in one checkpoint (the loss outside it), or as a scan over a checkpointed layer.
enum class Shape { unrolled, one_checkpoint, scan };

fy::Compiled compile(Shape shape, const std::optional<fy::Policy>& policy, fy::CompileOptions options) {
  options.checked = true;
  if (shape == Shape::scan) {
    auto step = fy::jit([policy](fy::Tensor x, fy::Tensor ws) {
      return fy::grad([&](fy::Tensor w) {
        auto body = [](fy::Tensor h, fy::Tensor wl) { return std::pair{layer(h, wl), fy::Tensor{}}; };
        fy::Tensor h = policy ? fy::scan(fy::checkpoint(body, *policy), x, w).carry : fy::scan(body, x, w).carry;
        return fy::sum(h * h);
      })(ws);
    });
    return step.lower(fy::ShapeDtype{{kBatch, kWidth}}, fy::ShapeDtype{{kLayers, kWidth, kWidth}}).compile(options);
  }
  auto step = fy::jit([shape, policy](fy::Tensor x, std::vector<fy::Tensor> ws) {
    return fy::grad([&](std::vector<fy::Tensor> w) {
      fy::Tensor h = shape == Shape::one_checkpoint && policy ? fy::checkpoint(layers, *policy)(x, w) : layers(x, w);
      return fy::sum(h * h);
    })(ws);
  });
  return step.lower(fy::ShapeDtype{{kBatch, kWidth}}, std::vector<fy::ShapeDtype>(kLayers, fy::ShapeDtype{{kWidth, kWidth}}))
      .compile(options);
}

// All the gradients of a run, one after the other.
std::vector<float> gradients(const fy::Compiled& c, const std::vector<fy::Array>& args) {
  std::vector<float> all;
  for (const fy::Array& g : c.run(args)) {
    std::vector<float> v = g.to_vector<float>();
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

// The code the page shows, on the same model.
void automatic_and_fit_to_limit() {
  const std::vector<fy::Array> args = arguments(false);
  const fy::Array x = args[0];
  const std::vector<fy::Array> params(args.begin() + 1, args.end());
  auto loss = [](fy::Tensor x, std::vector<fy::Tensor> params, auto model) {
    fy::Tensor h = model(x, params);
    return fy::sum(h * h);
  };

  auto model = fy::checkpoint(layers, fy::policies::automatic);   // one checkpoint around the layers, or one per layer
  auto step = fy::jit([&](fy::Tensor x, std::vector<fy::Tensor> params) {
    return fy::grad([&](std::vector<fy::Tensor> p) { return loss(x, p, model); })(params);
  });
  fy::Compiled c = step.lower(x, params).compile({.device_memory_limit = 4 << 20});
  double seconds = c.cost_analysis().estimated_seconds;  // the step time the planner minimised, copies overlapping compute

  // No checkpoint at all: every value the backward pass keeps across a gap may be offloaded.
  auto plain = fy::jit([&](fy::Tensor x, std::vector<fy::Tensor> params) {
    return fy::grad([&](std::vector<fy::Tensor> p) { return loss(x, p, layers); })(params);
  });
  fy::Compiled d = plain.lower(x, params).compile({.device_memory_limit = 4 << 20, .fit_to_limit = true});

  check(c.memory_analysis().peak_memory_in_bytes <= 4 << 20 && seconds > 0, "automatic fits 4 MiB");
  check(d.memory_analysis().peak_memory_in_bytes <= 4 << 20 && d.memory_analysis().host_temp_size_in_bytes > 0,
        "fit_to_limit fits 4 MiB by offloading");
  try {
    plain.lower(x, params).compile({.device_memory_limit = 4 << 20});
    check(false, "without fit_to_limit the plain step does not fit 4 MiB");
  } catch (const fy::Error& e) {
    check(e.code() == fy::ErrorCode::resource_exhausted, "without fit_to_limit the plain step does not fit 4 MiB");
  }

  // What to expect, before running: every policy's plan for the step, by the compiler's figures.
  auto lower = [&](const std::optional<fy::Policy>& p) {
    return fy::jit([&](fy::Tensor x, std::vector<fy::Tensor> params) {
             return fy::grad([&](std::vector<fy::Tensor> q) {
               return p ? loss(x, q, fy::checkpoint(layers, *p)) : loss(x, q, layers);
             })(params);
           }).lower(x, params);
  };
  fy::CompileOptions o = fy::calibrated_options();   // this machine's rates (ferry calibrate)
  o.device_memory_limit = 4 << 20;
  std::vector<fy::ExplainRow> rows = fy::explain(lower, o);
  std::cout << fy::format_explain(rows, o.device_memory_limit);

  check(rows.size() == 7 && rows.back().policy == "automatic" && rows.back().fits, "explain: automatic fits");
}

// To a tenth of a MiB: the scan body's plan differs by some tens of KiB between the processor's dot
// paths (runtime/cpu/dot_path.h; the workspace the dot kernels declare), which the table should not
// show: it is the same on every machine.
std::string mib(int64_t bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f MiB", double(bytes) / MiB);
  return s;
}

std::string limit_text(int64_t limit) {
  if (limit == 0) return "none";
  char s[32];
  std::snprintf(s, sizeof s, "%.1f MiB", double(limit) / MiB);
  return s;
}

// One row of the table: the plan under a limit, run in checked mode; its gradient must be the
// program's without checkpoints, bit for bit, and its measured peak the planned one.
struct Row {
  std::string label, note;
  Shape shape;
  std::optional<fy::Policy> policy;
  double fraction;  // of the all-saved peak (0: no limit)
  bool fit_to_limit = false;
};

void table() {
  const std::vector<fy::Array> separate = arguments(false), stacked = arguments(true);
  // The programs without checkpoints: the unrolled layers, and the scan.
  const std::vector<float> unrolled = gradients(compile(Shape::unrolled, std::nullopt, {}), separate);
  const std::vector<float> scanned = gradients(compile(Shape::scan, std::nullopt, {}), stacked);
  const fy::Policy automatic = fy::policies::automatic;
  const int64_t one_peak = compile(Shape::one_checkpoint, automatic, {}).memory_analysis().peak_memory_in_bytes;
  const int64_t scan_peak = compile(Shape::scan, automatic, {}).memory_analysis().peak_memory_in_bytes;
  const std::vector<Row> rows = {
      {"one `checkpoint(automatic)` around the layers", " (all saved)", Shape::one_checkpoint, automatic, 0},
      {"", "", Shape::one_checkpoint, automatic, 0.8},
      {"", "", Shape::one_checkpoint, automatic, 0.6},
      {"the same layers as `scan(checkpoint(layer, automatic))`", "", Shape::scan, automatic, 0},
      {"", "", Shape::scan, automatic, 0.8},
      {"", "", Shape::scan, automatic, 0.6},
      {"", "", Shape::scan, automatic, 0.4},
      {"no checkpoint, `fit_to_limit`", "", Shape::unrolled, std::nullopt, 0.6, true},
      {"one `checkpoint(nothing_saveable)` around the layers", "", Shape::one_checkpoint, fy::policies::nothing_saveable, 0},
      {"`scan(checkpoint(layer, nothing_saveable))`", "", Shape::scan, fy::policies::nothing_saveable, 0},
  };
  std::string table = "| | limit | device peak (planned = measured) | host peak | recomputed |\n|---|---|---|---|---|\n";
  for (const Row& r : rows) {
    const int64_t all_saved = r.shape == Shape::scan ? scan_peak : one_peak;
    const int64_t limit = static_cast<int64_t>(r.fraction * double(all_saved));
    fy::Compiled c = compile(r.shape, r.policy, {.device_memory_limit = limit, .fit_to_limit = r.fit_to_limit});
    const std::vector<float> g = gradients(c, r.shape == Shape::scan ? stacked : separate);
    const fy::MemoryStats m = c.memory_analysis();
    const fy::ExecutionStats e = c.execution_stats();
    char line[256];
    std::snprintf(line, sizeof line, "| %s | %s | %s%s | %s | %.1f MFLOP |\n", r.label.c_str(), limit_text(limit).c_str(),
                  mib(m.peak_memory_in_bytes).c_str(), r.note.c_str(), mib(m.host_peak_memory_in_bytes).c_str(),
                  c.cost_analysis().recompute_flops / 1e6);
    table += line;
    const std::vector<float>& reference = r.shape == Shape::scan ? scanned : unrolled;
    const bool same = g.size() == reference.size() && std::memcmp(g.data(), reference.data(), g.size() * sizeof(float)) == 0;
    check(same && e.device_high_water_bytes == m.peak_memory_in_bytes && (limit == 0 || m.peak_memory_in_bytes <= limit),
          "row " + limit_text(limit) + ": fits, measures what it planned, gradients bit-identical");
  }
  std::printf("%s", table.c_str());
}

}  // namespace

int main() {
  automatic_and_fit_to_limit();
  table();
  if (failures) std::printf("%d checks failed\n", failures);
  return failures ? 1 : 0;
}
