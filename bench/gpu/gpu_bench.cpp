// ferry on a GPU, for bench/gpu/run: copy bandwidth of the CUDA backend's copy engine each way
// against plain cudaMemcpyAsync from pinned memory, then gpt and scan_mlp training steps on the
// "cuda" backend under no checkpoint, nothing_saveable, names saved, names offloaded and automatic:
// the planned HBM peak, the peak the CUDA allocator measured, the GPU's own count
// (cudaMemGetInfo) and the median step time. Writes the rows as JSON (--json) for
// bench/gpu/compare.py, which runs the same models under JAX on the same GPU.
//   build/bench/gpu_bench --json rows.json [--repeats 10] [--quick]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runtime/backend.h"
#include "training.h"

namespace fy = ferry;
namespace fm = ferry::models;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(e)));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// GB/s of `bytes` copied `repeats` times (the median), device -> pinned_host and back, through
// ferry's copy engine and through cudaMemcpyAsync on a stream of our own.
nlohmann::json copy_bandwidth(size_t bytes, int repeats) {
  fy::runtime::Backend& cuda = fy::runtime::backend("cuda");
  void* dev = cuda.memory(fy::MemoryKind::device).allocate(bytes);
  void* host = cuda.memory(fy::MemoryKind::pinned_host).allocate(bytes);
  std::unique_ptr<fy::runtime::CopyEngine> engine = cuda.make_copy_engine();
  const fy::runtime::Stream compute = cuda.compute_stream();
  cudaStream_t own;
  check(cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking), "cudaStreamCreate");
  nlohmann::json out;
  for (bool to_host : {true, false}) {
    void* dst = to_host ? host : dev;
    const void* src = to_host ? dev : host;
    const auto to = to_host ? fy::MemoryKind::pinned_host : fy::MemoryKind::device;
    const auto from = to_host ? fy::MemoryKind::device : fy::MemoryKind::pinned_host;
    std::vector<double> ferry_s, raw_s;
    for (int i = 0; i <= repeats; ++i) {  // the first of each is a warm-up
      auto start = std::chrono::steady_clock::now();
      const uint64_t t = engine->enqueue(dst, to, src, from, bytes);
      engine->wait(t);
      cuda.synchronize(compute);
      if (i) ferry_s.push_back(seconds_since(start));
      start = std::chrono::steady_clock::now();
      check(cudaMemcpyAsync(dst, src, bytes, to_host ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice, own),
            "cudaMemcpyAsync");
      check(cudaStreamSynchronize(own), "cudaStreamSynchronize");
      if (i) raw_s.push_back(seconds_since(start));
    }
    const double f = static_cast<double>(bytes) / median(ferry_s) / 1e9, r = static_cast<double>(bytes) / median(raw_s) / 1e9;
    const char* dir = to_host ? "device -> pinned_host" : "pinned_host -> device";
    std::printf("copy %-22s %8.2f GB/s ferry, %8.2f GB/s cudaMemcpyAsync (%.2fx)\n", dir, f, r, f / r);
    out[dir] = {{"ferry_gb_per_s", f}, {"cuda_gb_per_s", r}, {"bytes", bytes}};
  }
  cudaStreamDestroy(own);
  cuda.memory(fy::MemoryKind::device).deallocate(dev, bytes);
  cuda.memory(fy::MemoryKind::pinned_host).deallocate(host, bytes);
  return out;
}

std::vector<fy::Array> on_gpu(const std::vector<fy::Array>& xs) {
  std::vector<fy::Array> out;
  for (const fy::Array& x : xs) out.push_back(x.to_backend("cuda"));
  return out;
}

// One compiled step on the GPU: compile, warm up, `repeats` timed runs (each on arguments copied
// to the GPU untimed, since a step may consume donated ones).
nlohmann::json measure(const std::string& model, const std::string& policy, const fy::Lowered& lowered,
                       const std::vector<fy::Array>& host_args, int repeats) {
  nlohmann::json row{{"model", model}, {"policy", policy}};
  try {
    fy::CompileOptions options;
    options.backend = "cuda";
    fy::Compiled c = lowered.compile(options);
    const fy::MemoryStats m = c.memory_analysis();
    std::vector<double> times;
    for (int i = 0; i <= repeats; ++i) {
      std::vector<fy::Array> args = on_gpu(host_args);
      const auto start = std::chrono::steady_clock::now();
      c.run(args);  // returns when the compute stream is done
      if (i) times.push_back(seconds_since(start));
    }
    const fy::ExecutionStats s = c.execution_stats();
    row["planned_peak_bytes"] = m.peak_memory_in_bytes;
    row["temp_bytes"] = m.temp_size_in_bytes;
    row["argument_bytes"] = m.argument_size_in_bytes;
    row["output_bytes"] = m.output_size_in_bytes;
    row["host_temp_bytes"] = m.host_temp_size_in_bytes;
    row["measured_peak_bytes"] = s.device_high_water_bytes;
    row["gpu_used_bytes"] = s.device_used_bytes;
    row["step_seconds"] = median(times);
    std::printf("%-9s %-17s planned %10.2f MiB  measured %10.2f MiB  %s  step %8.3f ms\n", model.c_str(),
                policy.c_str(), m.peak_memory_in_bytes / 1048576.0, s.device_high_water_bytes / 1048576.0,
                s.device_high_water_bytes == m.peak_memory_in_bytes ? "(equal)" : "(DIFFERENT)", median(times) * 1e3);
  } catch (const fy::Error& e) {
    row["error"] = e.what();
    std::printf("%-9s %-17s %s\n", model.c_str(), policy.c_str(), e.what());
  }
  std::fflush(stdout);
  return row;
}

// The policies the GPU comparison runs (of benchmark_policies), and automatic.
std::vector<fm::NamedPolicy> gpu_policies(const std::vector<std::string>& names) {
  std::vector<fm::NamedPolicy> out;
  for (fm::NamedPolicy& p : fm::benchmark_policies(names))
    if (p.name == "no checkpoint" || p.name == "nothing_saveable" || p.name == "names saved" ||
        p.name == "names offloaded")
      out.push_back(std::move(p));
  out.push_back({"automatic", fy::policies::automatic});
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ferry on a GPU: copy bandwidth, and gpt and scan_mlp steps under checkpoint policies"};
  std::string json_path;
  int repeats = 10;
  bool quick = false;
  app.add_option("--json", json_path, "write the rows here (for bench/gpu/compare.py)");
  app.add_option("--repeats", repeats, "timed steps per policy (the median is reported)")->check(CLI::Range(1, 1000));
  app.add_flag("--quick", quick, "small configurations");
  CLI11_PARSE(app, argc, argv);
  std::string why;
  if (!fy::backend_available("cuda", &why)) {
    std::fprintf(stderr, "gpu_bench: the cuda backend cannot run here: %s\n", why.c_str());
    return 1;
  }
  try {
    const fy::runtime::DeviceFacts facts = fy::runtime::backend("cuda").facts();
    std::printf("GPU: %s, %.1f GiB (%.1f GiB free)\n", facts.description.c_str(), facts.memory_bytes / 1073741824.0,
                facts.free_memory_bytes / 1073741824.0);
    nlohmann::json out;
    out["gpu"] = facts.description;
    out["copies"] = copy_bandwidth(size_t{256} << 20, 10);

    fm::ScanMlpConfig sc;  // the configurations of docs/BENCHMARKS.md (bench/suite_bench)
    fm::GptConfig gc;
    if (quick) sc = {.batch = 32, .width = 64, .hidden = 128, .layers = 4}, gc = {.d_model = 64, .seq = 32, .batch = 4, .layers = 2};
    out["scan_mlp_config"] = {{"batch", sc.batch}, {"width", sc.width}, {"hidden", sc.hidden}, {"layers", sc.layers}};
    out["gpt_config"] = {{"vocab", gc.vocab}, {"d_model", gc.d_model}, {"heads", gc.heads}, {"seq", gc.seq},
                         {"batch", gc.batch}, {"layers", gc.layers}, {"dropout", gc.dropout}};
    std::vector<fy::Array> scan_args{fm::scan_mlp_input(sc, 0)};
    for (const fy::Array& w : fm::scan_mlp_params(sc, 0)) scan_args.push_back(w);
    for (const fm::NamedPolicy& p : gpu_policies(fm::scan_mlp_names()))
      out["rows"].push_back(measure("scan_mlp", p.name, fm::lower_scan_mlp_grad(sc, p.policy), scan_args, repeats));

    std::vector<fy::Array> gpt_args = fm::gpt_params(gc, 1);
    const size_t n = gpt_args.size();
    for (int copy = 0; copy < 2; ++copy)
      for (size_t i = 0; i < n; ++i) gpt_args.push_back(fy::zeros(gpt_args[i].shape(), gpt_args[i].dtype()));
    auto [tokens, targets] = fm::copy_task_batch(gc, 0);
    gpt_args.push_back(fy::Array::scalar<float>(0));
    gpt_args.push_back(tokens);
    gpt_args.push_back(targets);
    for (const fm::NamedPolicy& p : gpu_policies(fm::gpt_names()))
      out["rows"].push_back(measure("gpt", p.name, fm::lower_gpt_train_step(gc, p.policy), gpt_args, repeats));
    if (!json_path.empty()) std::ofstream(json_path) << out.dump(2) << "\n";
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
