// The examples of docs/guide/backends.md ("Backends, and more than one process"). The CUDA code is
// compiled everywhere and runs where a GPU can (ferry::backend_available); elsewhere this checks
// that asking for "cuda" is refused with the reason. More than one process: run plainly (as ctest
// does) it checks that initialize() refuses and says how to launch; under mpirun it joins. The page
// quotes the code between the checks; docs.snippets checks that it is still here, docs.backends runs it.
#include <cmath>
#include <cstdio>
#include <cstdlib>
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

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

void on_the_gpu(const ferry::Lowered& lowered, const ferry::Array& x, const ferry::Array& w,
                const std::vector<float>& on_the_cpu) {
  ferry::CompileOptions o;
  o.backend = "cuda";  // device_memory_limit 0 means: the GPU's free memory when compiling;
                       // cost-model rates left unset are the GPU's nominal ones
  ferry::Compiled step = lowered.compile(o);
  std::vector<ferry::Array> out = step.run({x.to_backend("cuda"), w.to_backend("cuda")});

  const std::vector<float> got = out[0].to_vector<float>();
  check(out[0].backend() == "cuda", "a CUDA program's outputs are CUDA arrays");
  bool close = got.size() == on_the_cpu.size();
  for (size_t i = 0; close && i < got.size(); ++i) close = std::abs(got[i] - on_the_cpu[i]) <= 1e-4f * (1 + std::abs(on_the_cpu[i]));
  check(close, "the GPU computes what the CPU does");
  check(step.execution_stats().device_high_water_bytes == step.memory_analysis().peak_memory_in_bytes,
        "on the GPU too, the measured peak is the plan's");
  try {
    step.run({x, w});
    check(false, "a CUDA program refuses CPU arrays");
  } catch (const fy::Error& e) {
    check(e.code() == fy::ErrorCode::invalid_argument && contains(e.what(), "to_backend"),
          "a CUDA program refuses CPU arrays, naming to_backend");
  }
}

void backends() {
  auto f = fy::jit([](fy::Tensor x, fy::Tensor w) { return fy::tanh(fy::matmul(x, w)); });
  const fy::Array x = fy::full({64, 32}, 0.1), w = fy::full({32, 16}, 0.2);
  const fy::Lowered lowered = f.lower(x, w);
  const std::vector<float> on_the_cpu = lowered.compile().run({x, w})[0].to_vector<float>();
  check(x.backend() == "cpu", "Array::from, ones, full... make CPU arrays");

  std::string built;
  for (const std::string& b : ferry::built_backends()) built += b + " ";
  std::string why;
  const bool cuda = ferry::backend_available("cuda", &why);
  std::printf("built backends: %s; cuda %s%s\n", built.c_str(), cuda ? "available" : "not available: ", why.c_str());
  if (cuda) {
    on_the_gpu(lowered, x, w, on_the_cpu);
    return;
  }
  try {
    ferry::CompileOptions o;
    o.backend = "cuda";
    lowered.compile(o);
    check(false, "compiling for cuda without a usable GPU is refused");
  } catch (const fy::Error& e) {
    std::printf("%s\n", e.what());
    check(e.code() == fy::ErrorCode::unimplemented, "compiling for cuda without a usable GPU is UNIMPLEMENTED");
  }
}

// Data parallelism with the gradients sharded (ZeRO-2): each process fits w to its own row of
// the data; the step averages the gradients, and each process keeps 1/N of AdamW's moments.
void sharded_training() {
  const int me = fy::distributed::process_index();
  auto loss_of = [](std::vector<fy::Tensor> w, fy::Tensor x) { return fy::sum((x - w[0]) * (x - w[0])); };
  using State = fy::optim::AdamWState<std::vector<fy::Tensor>>;
  auto step = fy::jit([&](std::vector<fy::Tensor> w, State s, fy::Tensor x) {
    auto [loss, g] = fy::value_and_grad(loss_of)(w, x);        // this process's data
    auto [w2, s2] = fy::optim::sharded_adamw(w, g, s, 0.1, "data", fy::optim::Sharding::gradients);
    return std::tuple{fy::pmean(loss, "data"), w2, s2};
  });
  std::vector<fy::Array> w{fy::zeros({8})};
  auto state = fy::optim::adamw_init_sharded(w);               // moments of 8 / N elements each
  fy::Array x = fy::full({8}, 2.0 * (me + 1));                  // the processes' mean: N + 1
  float first = 0, last = 0;
  for (int i = 0; i < 100; ++i) {
    auto [loss, w2, s2] = step(w, state, x);
    (i == 0 ? first : last) = loss.to_vector<float>()[0];
    w = w2;
    state = s2;
  }

  const int n = fy::distributed::process_count();
  check(state.mu[0].size() == (8 + n - 1) / n, "each process holds 1/N of the moments");
  const float mean = static_cast<float>(n + 1);
  check(std::abs(w[0].to_vector<float>()[0] - mean) < 0.05f && last < first,
        "the shared w moves to the processes' mean");
}

void more_than_one_process() {
  if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK") || std::getenv("PMI_SIZE")) {  // launched
    fy::distributed::initialize();              // the launcher's processes, one axis named "data"
    int me = fy::distributed::process_index();  // 0 .. process_count() - 1
    auto total = fy::jit([](fy::Tensor x) { return fy::psum(x, "data"); });   // every process gets the sum

    check(me >= 0 && me < fy::distributed::process_count() && fy::distributed::axis_name() == "data",
          "this process has its index among the launched ones");
    const int n = fy::distributed::process_count();
    const std::vector<float> sum = total(fy::full({3}, me + 1.0))[0].to_vector<float>();
    check(sum == std::vector<float>(3, n * (n + 1) / 2.0f), "psum: every process gets the sum");
    sharded_training();
    return;
  }
  try {
    fy::distributed::initialize();
    check(false, "initialize() without a launcher is refused");
  } catch (const fy::Error& e) {
    std::printf("%s\n", e.what());
    check(e.code() == fy::ErrorCode::invalid_argument || e.code() == fy::ErrorCode::unimplemented,
          "initialize() without a launcher (or without MPI in the build) is refused, saying why");
  }
}

}  // namespace

int main() {
  backends();
  more_than_one_process();
  if (failures) std::printf("%d checks failed\n", failures);
  return failures ? 1 : 0;
}
