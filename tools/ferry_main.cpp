// The ferry command: `ferry demo` traces, lowers, compiles and runs a built-in model and trains it
// for a few steps; `ferry explain` compares checkpoint policies on a built-in model before anything
// runs (--html draws their plans on one page); `ferry memory` prints an IR program's plan (--html
// draws it); `ferry calibrate` measures the cost model's rates; `ferry check` and `ferry run` read IR text.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "byte_size.h"
#include "demo.h"
#include "explain_models.h"
#include "ferry/ferry.h"

namespace fy = ferry;

namespace {

// Deterministic pseudo-random values in [-scale, scale), so the demo prints the same every time.
fy::Array random_array(const fy::Shape& shape, uint64_t seed, float scale) {
  std::vector<float> v(static_cast<size_t>(fy::num_elements(shape)));
  uint64_t s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (float& x : v) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    x = scale * (static_cast<float>(s >> 40) / static_cast<float>(1 << 24) * 2.0f - 1.0f);
  }
  return fy::Array::from(v, shape);
}

int run_mlp_demo_impl() {
  // A two-layer tanh MLP on a batch, with its squared-error loss: parameters come as a list.
  auto model = fy::jit(
      [](fy::Tensor x, std::vector<fy::Tensor> params, fy::Tensor target) {
        fy::Tensor h = fy::tanh(fy::matmul(x, params[0]) + params[1]);
        fy::Tensor y = fy::matmul(h, params[2]) + params[3];
        fy::Tensor loss = fy::mean((y - target) * (y - target));
        return std::pair{loss, y};
      },
      "mlp");
  fy::Array x = random_array({8, 16}, 1, 1.0f);
  std::vector<fy::Array> params = {random_array({16, 32}, 2, 0.25f), fy::zeros({32}), random_array({32, 4}, 3, 0.25f),
                                   fy::zeros({4})};
  fy::Array target = random_array({8, 4}, 4, 1.0f);

  fy::Lowered lowered = model.lower(x, params, target);
  fmt::print("== the traced program ==\n{}\n", lowered.as_text());
  fy::Compiled compiled = lowered.compile();
  std::vector<fy::Array> out = compiled(x, params, target);
  fmt::print("== outputs ==\nloss = {}\ny    = {}\n\n", out[0].to_string(), out[1].to_string(16));

  // One compiled training step: the loss, its gradient with respect to the parameter list, and an
  // SGD update, all in one program.
  auto train_step = fy::jit(
      [](fy::Tensor x, std::vector<fy::Tensor> params, fy::Tensor target) {
        auto [loss, grads] = fy::value_and_grad(
            [&](std::vector<fy::Tensor> p) {
              fy::Tensor y = fy::matmul(fy::tanh(fy::matmul(x, p[0]) + p[1]), p[2]) + p[3];
              return fy::mean((y - target) * (y - target));
            })(params);
        std::vector<fy::Tensor> updated;
        for (size_t i = 0; i < params.size(); ++i) updated.push_back(params[i] - 0.5 * grads[i]);
        return std::pair{loss, updated};
      },
      "train_step");
  fy::Compiled step = train_step.lower(x, params, target).compile();
  fmt::print("== training with SGD (lr 0.5) ==\n");
  for (int i = 0; i < 10; ++i) {
    std::vector<fy::Array> r = step(x, params, target);
    fmt::print("step {:2d}  loss {:.6f}\n", i, r[0].to_vector<float>()[0]);
    params.assign(r.begin() + 1, r.end());
  }
  return 0;
}

// IR text larger than this is refused before it is read (a 100,000-equation program is ~10 MB).
constexpr int64_t kMaxIrFileBytes = int64_t{256} << 20;

// A regular file of at most kMaxIrFileBytes: a folder would read as empty text, and /dev/zero or a
// FIFO would be read forever (or wait for a writer: hence O_NONBLOCK, which a regular file ignores).
std::string read_file(const std::string& path) {
  auto refuse = [&](const std::string& why) {
    return fy::Error(fy::ErrorCode::invalid_argument, fmt::format("cannot read {}: {}", path, why));
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw refuse(std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw refuse(std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw refuse("it is a folder; give a file of IR text");
  if (!S_ISREG(st.st_mode)) throw refuse("it is not a regular file (a device, FIFO or socket); give a file of IR text");
  if (st.st_size > kMaxIrFileBytes)
    throw refuse(fmt::format("it has {} bytes, more than the {} an IR text file may have", st.st_size, kMaxIrFileBytes));
  std::string text;
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw refuse(std::strerror(errno));
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    // The file may grow while it is read.
    if (static_cast<int64_t>(text.size()) > kMaxIrFileBytes)
      throw refuse(fmt::format("it has more than the {} bytes an IR text file may have", kMaxIrFileBytes));
  }
  return text;
}

// The device limit: --device-memory-limit, else FERRY_DEVICE_MEMORY_LIMIT, else none; in bytes or
// with a unit (64MiB, 1.5GiB) either way, as explain --limit takes it.
fy::CompileOptions compile_options(const std::string& flag_limit, const std::string& backend) {
  fy::CompileOptions options;
  options.backend = backend;
  options.device_memory_limit = ferry::tools::parse_byte_size(flag_limit, "--device-memory-limit");
  if (options.device_memory_limit == 0)
    options.device_memory_limit = ferry::tools::byte_size_from_environment("FERRY_DEVICE_MEMORY_LIMIT");
  return options;
}

// The compiled program first: the report names its equations by the %ids printed there. With
// --html, the plan drawn as a page (Compiled::save_memory_html) too.
int memory(const std::string& path, const std::string& limit, const std::string& backend, const std::string& html) {
  fy::Compiled compiled = fy::parse_program(read_file(path)).compile(compile_options(limit, backend));
  fmt::print("== the compiled program ==\n{}\n{}", compiled.as_text(), compiled.memory_report());
  if (!html.empty()) {
    compiled.save_memory_html(html);
    fmt::print("the memory page: {}\n", html);
  }
  return 0;
}

int check(const std::string& path) {
  fy::Lowered lowered = fy::parse_program(read_file(path));
  fmt::print("{}", lowered.as_text());
  return 0;
}

int run(const std::string& path, const std::string& limit, const std::string& backend) {
  fy::Lowered lowered = fy::parse_program(read_file(path));
  fy::Compiled compiled = lowered.compile(compile_options(limit, backend));
  // Every input filled with ones of its type, in its memory kind, on the backend.
  std::vector<fy::Array> args;
  for (const auto& spec : compiled.input_specs())
    args.push_back(fy::ones(spec.shape, spec.dtype, spec.kind).to_backend(backend));
  std::vector<fy::Array> out = compiled.run(args);
  for (size_t i = 0; i < out.size(); ++i) fmt::print("output {}: {}\n", i, out[i].to_string());
  fy::ExecutionStats stats = compiled.execution_stats();
  fmt::print("device high-water {} bytes (planned {}), host high-water {} bytes\n", stats.device_high_water_bytes,
             compiled.memory_analysis().peak_memory_in_bytes, stats.host_high_water_bytes);
  if (stats.device_used_bytes > 0)
    fmt::print("the GPU's own count (cudaMemGetInfo) at the end of the run: {} bytes in use\n", stats.device_used_bytes);
  return 0;
}

int info() {
  const fy::MachineInfo m = fy::machine_info();
  fmt::print("processor:   {}\nisa:         {}\nthreads:     {}\n{}\n", m.processor, m.isa, m.threads, m.dot_general);
  for (const std::string& w : m.warnings) fmt::print("warning:     {}\n", w);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ferry: trace, differentiate and compile array programs that fit in device memory"};
  app.require_subcommand(1);
  ferry::tools::DemoOptions demo_options;
  auto* demo_cmd = app.add_subcommand(
      "demo", "train a built-in GPT under a device memory limit; compare checkpoint policies first");
  demo_cmd->add_option("--steps", demo_options.steps, "training steps")->check(CLI::Range(1, 100000));
  demo_cmd->add_option("--min-factor", demo_options.min_factor, "fail unless the loss falls by this factor");
  demo_cmd->add_option("--save", demo_options.save_path,
                       "where to save the trained model and optimizer state (safetensors; \"\" to skip)");
  demo_cmd->add_option("--resume", demo_options.resume_path, "continue training from a checkpoint --save wrote");
  demo_cmd->add_flag("--print-losses", demo_options.print_losses, "print every step's loss exactly");
  demo_cmd->add_option("--html", demo_options.html_path,
                       "where to write the page that draws the trained step's memory plan (\"\" to skip)");
  demo_cmd->add_flag("--processes", demo_options.processes,
                     "train data-parallel over the processes of an mpirun launch (mpirun -np 2 ferry demo --processes)");
  demo_cmd->add_option("--sharding", demo_options.sharding,
                       "with --processes: replicated, optimizer_state (zero1), gradients (zero2) or parameters (fsdp)");
  demo_cmd->add_option("--json", demo_options.json_path, "with --processes: where process 0 writes its figures");
  app.add_subcommand("mlp", "trace, print, compile, run and train a small MLP");
  app.add_subcommand("info", "the processor, its instruction sets, and the kernel path ferry chose for it");
  std::string path;
  auto* check_cmd = app.add_subcommand("check", "parse and verify IR text; print it canonically");
  check_cmd->add_option("file", path, "IR text file (a regular file of at most 256 MiB)")->required();
  std::string limit = "0";
  auto* run_cmd = app.add_subcommand("run", "compile IR text and run it with every input filled with ones");
  run_cmd->add_option("file", path, "IR text file (a regular file of at most 256 MiB)")->required();
  auto* memory_cmd = app.add_subcommand("memory", "compile IR text and print its memory plan");
  memory_cmd->add_option("file", path, "IR text file (a regular file of at most 256 MiB)")->required();
  std::string html;
  memory_cmd->add_option("--html", html, "also write the plan drawn as a self-contained HTML page to this file");
  std::string backend = "cpu";
  for (auto* cmd : {run_cmd, memory_cmd}) {
    cmd->add_option("--device-memory-limit", limit,
                    "device memory the plan may use, in bytes or with a unit, e.g. 67108864 or 64MiB (0: none, or "
                    "on a GPU its free memory; default from FERRY_DEVICE_MEMORY_LIMIT, which takes the same)");
    cmd->add_option("--backend", backend,
                    fmt::format("where the program runs: {}", fmt::join(fy::built_backends(), " or ")));
  }
  ferry::tools::ExplainOptions explain_options;
  std::string explain_limit = "0";
  auto* explain_cmd = app.add_subcommand(
      "explain", "what one training step of a built-in model costs under each checkpoint policy and automatic");
  explain_cmd->add_option("model", explain_options.model, "gpt or scan_mlp")->required();
  explain_cmd->add_option("--limit", explain_limit, "device memory limit in bytes, e.g. 67108864 or 64MiB (0: none)");
  explain_cmd->add_flag("--small", explain_options.small, "a small configuration of the model");
  explain_cmd->add_option("--html", explain_options.html,
                          "also write every policy's plan as one HTML page (small multiples on one scale) to this file");
  int calibrate_repeats = 5;
  auto* calibrate_cmd =
      app.add_subcommand("calibrate", "measure this machine's rates for the cost model and cache them");
  calibrate_cmd->add_option("--repeats", calibrate_repeats, "timed runs of each program (the median is taken)")
      ->check(CLI::Range(1, 1000));
  CLI11_PARSE(app, argc, argv);
  try {
    if (app.got_subcommand("demo")) {
      // A few resumed steps need not lower the loss; check it only when asked to.
      if (!demo_options.resume_path.empty() && demo_cmd->count("--min-factor") == 0) demo_options.min_factor = 0;
      if (demo_options.processes) return ferry::tools::run_demo_processes(demo_options);
      return ferry::tools::run_demo(demo_options);
    }
    if (app.got_subcommand("explain")) {
      explain_options.limit = ferry::tools::parse_byte_size(explain_limit, "--limit");
      return ferry::tools::run_explain(explain_options);
    }
    if (app.got_subcommand("calibrate")) return ferry::tools::run_calibrate(calibrate_repeats);
    if (app.got_subcommand("mlp")) return run_mlp_demo_impl();
    if (app.got_subcommand("info")) return info();
    if (app.got_subcommand("check")) return check(path);
    if (app.got_subcommand("run")) return run(path, limit, backend);
    if (app.got_subcommand("memory")) return memory(path, limit, backend, html);
  } catch (const fy::Error& e) {
    fmt::print(stderr, "ferry: {}\n", e.what());
    return 1;
  }
  return 0;
}
