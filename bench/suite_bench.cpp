// The benchmark suite: every model x policy, with the planned device peak, host temporaries, the
// cost model's recompute FLOPs and copies, and the median step time. One command regenerates
// docs/BENCHMARKS.md and docs/benchmarks.csv:
//   build/bench/suite_bench --out docs
// --json FILE also writes the rows for bench/peers/peers.py; --dump DIR writes small-config inputs
// and ferry's gradients for the peers' gradient check; --quick uses small configs (tests).
#include <sys/utsname.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "training.h"

namespace fy = ferry;
namespace fm = ferry::models;

namespace {

struct Row {
  std::string model;
  fm::StepReport r;
};

std::vector<fy::Array> scan_mlp_args(const fm::ScanMlpConfig& c) {
  std::vector<fy::Array> args{fm::scan_mlp_input(c, 0)};
  for (const fy::Array& w : fm::scan_mlp_params(c, 0)) args.push_back(w);
  return args;
}

std::vector<fy::Array> gpt_args(const fm::GptConfig& c) {
  fm::GptTrainer probe(c, fm::compile_gpt_train_step(c, std::nullopt), 1);
  auto [tokens, targets] = fm::copy_task_batch(c, 0);
  std::vector<fy::Array> args = probe.params;
  for (auto* state : {&probe.m, &probe.v}) args.insert(args.end(), state->begin(), state->end());
  args.push_back(probe.count);
  args.push_back(tokens);
  args.push_back(targets);
  return args;
}

std::vector<Row> run_scan_mlp(const fm::ScanMlpConfig& c, int repeats) {
  std::vector<Row> rows;
  std::vector<fy::Array> args = scan_mlp_args(c);
  for (const fm::NamedPolicy& p : fm::benchmark_policies(fm::scan_mlp_names())) {
    std::fprintf(stderr, "scan_mlp / %s\n", p.name.c_str());
    rows.push_back({"scan_mlp", fm::measure_step(p.name, fm::compile_scan_mlp_grad(c, p.policy), args, repeats)});
  }
  return rows;
}

std::vector<Row> run_gpt(const fm::GptConfig& c, int repeats) {
  std::vector<Row> rows;
  std::vector<fy::Array> args = gpt_args(c);
  for (const fm::NamedPolicy& p : fm::benchmark_policies(fm::gpt_names())) {
    std::fprintf(stderr, "gpt / %s\n", p.name.c_str());
    rows.push_back({"gpt", fm::measure_step(p.name, fm::compile_gpt_train_step(c, p.policy), args, repeats)});
  }
  return rows;
}

// --serve: one step at a time on request, so that bench/peers/peers.py can interleave ferry's steps
// with JAX's and PyTorch's and compare medians taken over the same seconds (this VM's speed drifts by
// up to 2x from one minute to the next, more than the differences being measured). Commands on
// stdin, one per line; every reply is one line on stdout:
//   load MODEL POLICY  compiles that row's step and runs it once (warm-up) -> "ready" or "error ..."
//   step               one step on fresh copies of the arguments (copied untimed) -> its seconds
//   quit
int serve(const fm::ScanMlpConfig& sc, const fm::GptConfig& gc) {
  std::vector<fy::Array> args;
  std::string args_model;  // the model `args` are for (gpt's take a compile to make)
  std::optional<fy::Compiled> step;
  auto reply = [](const std::string& line) {
    std::fputs((line + "\n").c_str(), stdout);
    std::fflush(stdout);
  };
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string command, model;
    in >> command;
    if (command == "quit") return 0;
    if (command == "load") {
      in >> model;
      std::string policy;
      std::getline(in >> std::ws, policy);
      step.reset();
      const bool gpt = model == "gpt";
      if (!gpt && model != "scan_mlp") {
        reply("error unknown model " + model);
        continue;
      }
      std::vector<fm::NamedPolicy> policies = fm::benchmark_policies(gpt ? fm::gpt_names() : fm::scan_mlp_names());
      auto p = std::find_if(policies.begin(), policies.end(), [&](const fm::NamedPolicy& q) { return q.name == policy; });
      if (p == policies.end()) {
        reply("error unknown policy " + policy);
        continue;
      }
      try {
        if (args_model != model) args = gpt ? gpt_args(gc) : scan_mlp_args(sc);
        args_model = model;
        step.emplace(gpt ? fm::compile_gpt_train_step(gc, p->policy) : fm::compile_scan_mlp_grad(sc, p->policy));
        fm::timed_step(*step, args);  // warm up
        reply("ready");
      } catch (const std::exception& e) {
        step.reset();
        reply(std::string("error ") + e.what());
      }
    } else if (command == "step") {
      if (!step) {
        reply("error no step loaded");
        continue;
      }
      reply(fmt::format("{:.9f}", fm::timed_step(*step, args)));
    } else {
      reply("error unknown command " + command);
    }
  }
  return 0;
}

void write_raw(const std::string& path, const fy::Array& a) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(a.data()), static_cast<std::streamsize>(a.nbytes()));
}

// Inputs and gradients of small configs, as raw little-endian f32 / i32 plus a manifest.
void dump(const std::string& dir) {
  nlohmann::json manifest;
  auto put = [&](const std::string& name, const fy::Array& a) {
    write_raw(dir + "/" + name + ".bin", a);
    manifest[name] = {{"shape", a.shape()}, {"dtype", std::string(fy::dtype_name(a.dtype()))}};
  };
  fm::ScanMlpConfig sc{.batch = 8, .width = 16, .hidden = 32, .layers = 3};
  fy::Array x = fm::scan_mlp_input(sc, 7);
  std::vector<fy::Array> w = fm::scan_mlp_params(sc, 7);
  std::vector<fy::Array> g = fm::compile_scan_mlp_grad(sc, std::nullopt).run({x, w[0], w[1]});
  put("scan_mlp.x", x);
  put("scan_mlp.w1", w[0]);
  put("scan_mlp.w2", w[1]);
  put("scan_mlp.loss", g[0]);
  put("scan_mlp.dw1", g[1]);
  put("scan_mlp.dw2", g[2]);
  manifest["scan_mlp.config"] = {{"batch", sc.batch}, {"width", sc.width}, {"hidden", sc.hidden}, {"layers", sc.layers}};

  fm::GptConfig gc{.vocab = 11, .d_model = 16, .heads = 2, .seq = 8, .batch = 2, .layers = 2};
  std::vector<fy::Array> params = fm::gpt_params(gc, 7);
  auto [tokens, targets] = fm::copy_task_batch(gc, 7);
  auto grad = fy::jit([gc](std::vector<fy::Tensor> p, fy::Tensor tk, fy::Tensor tg) {
    return fy::value_and_grad([&](std::vector<fy::Tensor> q) { return fm::gpt_loss(q, tk, tg, gc, std::nullopt); })(p);
  });
  std::vector<fy::Array> out = grad.lower(params, tokens, targets).compile()(params, tokens, targets);
  std::vector<std::string> names = fm::gpt_param_names();
  for (size_t i = 0; i < params.size(); ++i) {
    put("gpt." + names[i], params[i]);
    put("gpt.d_" + names[i], out[i + 1]);
  }
  put("gpt.tokens", tokens);
  put("gpt.targets", targets);
  put("gpt.loss", out[0]);
  manifest["gpt.config"] = {{"vocab", gc.vocab},   {"d_model", gc.d_model}, {"heads", gc.heads},
                            {"seq", gc.seq},       {"batch", gc.batch},     {"layers", gc.layers},
                            {"dropout", gc.dropout}, {"dropout_seed", gc.dropout_seed}};
  std::ofstream(dir + "/manifest.json") << manifest.dump(1);
}

std::string machine() {
  utsname u{};
  uname(&u);
  // The processor, its ISA and the kernel path every figure ran on (machines change between runs).
  return fmt::format("{} {}, {} hardware threads; {}", u.sysname, u.machine, std::thread::hardware_concurrency(),
                     ferry::machine_info().summary());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ferry's benchmark suite: models x checkpoint policies"};
  std::string out_dir, json_path, dump_dir;
  int repeats = 5;
  bool quick = false, dump_only = false, serve_steps = false;
  app.add_option("--out", out_dir, "write BENCHMARKS.md and benchmarks.csv into this folder");
  app.add_option("--json", json_path, "write the rows as JSON (for bench/peers/peers.py)");
  app.add_option("--dump", dump_dir, "write small-config inputs and gradients for the peers' gradient check");
  app.add_option("--repeats", repeats, "timed runs per row (the median is reported)");
  app.add_flag("--quick", quick, "small configurations (a smoke test)");
  app.add_flag("--dump-only", dump_only, "write --dump's files and stop (bench/peers/gpt_reference.py)");
  app.add_flag("--serve", serve_steps, "run steps one at a time as stdin asks (bench/peers/peers.py)");
  CLI11_PARSE(app, argc, argv);
  if (!dump_dir.empty()) dump(dump_dir);
  if (dump_only) return 0;

  fm::ScanMlpConfig sc;
  fm::GptConfig gc;
  if (quick) {
    sc = {.batch = 16, .width = 32, .hidden = 64, .layers = 3};
    gc = {.vocab = 16, .d_model = 32, .heads = 2, .seq = 16, .batch = 2, .layers = 2};
  }
  if (serve_steps) return serve(sc, gc);
  std::vector<Row> rows = run_scan_mlp(sc, repeats);
  for (Row& r : run_gpt(gc, repeats)) rows.push_back(r);

  std::string config = fmt::format(
      "scan_mlp: batch {}, width {}, hidden {}, {} layers (gradient of sum(output) w.r.t. w1, w2). "
      "gpt: d_model {}, {} heads, sequence {}, batch {}, {} layers, vocabulary {} (loss, gradients and Adam update).",
      sc.batch, sc.width, sc.hidden, sc.layers, gc.d_model, gc.heads, gc.seq, gc.batch, gc.layers, gc.vocab);
  std::string csv = "model,policy,device_peak_bytes,host_bytes,recompute_flops,copy_bytes,step_seconds\n";
  std::string table =
      "| model | policy | device peak (MiB) | host (MiB) | recompute (GFLOP) | copied (MiB) | step (ms) |\n"
      "|---|---|---:|---:|---:|---:|---:|\n";
  nlohmann::json json = nlohmann::json::array();
  for (const Row& row : rows) {
    const fm::StepReport& r = row.r;
    csv += fmt::format("{},{},{},{},{},{},{:.6f}\n", row.model, r.policy, r.device_peak, r.host_bytes, r.recompute_flops,
                       r.copy_bytes, r.step_seconds);
    table += fmt::format("| {} | {} | {:.2f} | {:.2f} | {:.3f} | {:.2f} | {:.1f} |\n", row.model, r.policy,
                         r.device_peak / 1048576.0, r.host_bytes / 1048576.0, r.recompute_flops / 1e9,
                         r.copy_bytes / 1048576.0, r.step_seconds * 1e3);
    json.push_back({{"model", row.model},
                    {"policy", r.policy},
                    {"device_peak_bytes", r.device_peak},
                    {"temp_bytes", r.temp_bytes},
                    {"host_bytes", r.host_bytes},
                    {"recompute_flops", r.recompute_flops},
                    {"copy_bytes", r.copy_bytes},
                    {"step_seconds", r.step_seconds}});
  }
  std::printf("%s\n\n%s", config.c_str(), table.c_str());
  nlohmann::json configs = {
      {"scan_mlp", {{"batch", sc.batch}, {"width", sc.width}, {"hidden", sc.hidden}, {"layers", sc.layers}}},
      {"gpt", {{"vocab", gc.vocab}, {"d_model", gc.d_model}, {"heads", gc.heads}, {"seq", gc.seq}, {"batch", gc.batch},
               {"layers", gc.layers}}}};
  if (!json_path.empty())
    std::ofstream(json_path) << nlohmann::json{{"config", config}, {"configs", configs}, {"machine", machine()},
                                               {"repeats", repeats}, {"quick", quick}, {"rows", json}}
                                    .dump(1);
  if (!out_dir.empty()) {
    std::ofstream(out_dir + "/benchmarks.csv") << csv;
    std::ofstream(out_dir + "/BENCHMARKS.md")
        << "# ferry benchmarks\n\nGenerated by `build/bench/suite_bench --out docs` (peers: `bench/peers/run.sh`).\n\n"
        << "The automatic planner against these policies at three device budgets: [AUTOMATIC.md](AUTOMATIC.md) "
        << "(`build/bench/auto_bench --out docs`).\n\n"
        << "Machine: " << machine() << ". Step time is the median of " << repeats << " runs after a warm-up; "
        << "memory is the compiled plan's (measured equal by the runtime).\n\n"
        << config << "\n\n" << table;
  }
  return 0;
}
