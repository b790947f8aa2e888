// The examples of docs/guide/policies.md ("Policies and names"), each a function that checks what
// the page says of it. The page quotes the parts between the checks and some of what this program
// prints; the docs.snippets test checks both, and docs.policies runs it.
#include <cstdio>
#include <iostream>
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

// A name the policy saves that the backward pass never reads.
void unused_name() {
  auto f = [](fy::Tensor x) {
    fy::Tensor h = fy::checkpoint_name(fy::sin(x), "act");
    return fy::sum(h * 2.0);                        // the cotangent of h needs nothing of h
  };
  auto layer = fy::checkpoint(f, fy::policies::save_only_these_names({"act"}));
  fy::print_saved_residuals(layer, fy::ones({4}));
  fy::Lowered lowered = fy::jit([&](fy::Tensor x) { return fy::grad(layer)(x); }).lower(fy::ones({4}));
  for (const std::string& w : lowered.warnings()) std::cout << w << "\n";

  check(lowered.warnings().size() == 1 && contains(lowered.warnings()[0], "'act'"),
        "a name that has no effect is a warning");
}

// The decisions, as the IR shows them.
void decisions_in_the_ir() {
  auto layer = [](fy::Tensor x) {
    fy::Tensor h = fy::checkpoint_name(fy::sin(x), "h");
    return fy::sum(fy::sin(h));
  };
  auto policy = fy::policies::save_and_offload_only_these_names(
      {}, {"h"}, fy::MemoryKind::device, fy::MemoryKind::pinned_host);
  auto forward = fy::jit([&](fy::Tensor x) { return fy::checkpoint(layer, policy)(x); });
  auto step = fy::jit([&](fy::Tensor x) { return fy::grad(fy::checkpoint(layer, policy))(x); });
  std::cout << forward.lower(fy::ones({4})).as_text();   // each equation with its decision
  std::cout << step.lower(fy::ones({4})).as_text();      // differentiated: the decisions carried out

  const std::string decided = forward.lower(fy::ones({4})).as_text(), done = step.lower(fy::ones({4})).as_text();
  check(contains(decided, "!offload(device,pinned_host)") && contains(decided, "!recompute"),
        "the IR marks each equation's decision");
  check(contains(done, "device_put[dst=pinned_host]") && contains(done, "!remat"),
        "differentiated, the offload is a device_put and recomputations are marked !remat");
}

// A policy is any callable from an equation to a decision.
void custom_policies() {
  fy::Policy offload_big_dots([](const fy::Equation& e) -> fy::Decision {
    if (e.primitive() == fy::prim::dot_general && fy::num_elements(e.output_types()[0].shape) >= 1024)
      return fy::Offloadable{fy::MemoryKind::device, fy::MemoryKind::pinned_host};
    return fy::Recompute{};
  }, "offload_big_dots");
  auto both = fy::policies::save_from_both_policies(fy::policies::save_only_these_names({"x"}), offload_big_dots);

  auto layer = [](fy::Tensor x, fy::Tensor w) {
    fy::Tensor h = fy::tanh(fy::matmul(x, w));
    return fy::sum(fy::sin(h) * h);
  };
  auto step = fy::jit([&](fy::Tensor x, fy::Tensor w) { return fy::grad(fy::checkpoint(layer, both))(x, w); });
  fy::Compiled c = step.lower(fy::ones({64, 32}), fy::ones({32, 32})).compile();
  check(c.memory_analysis().host_temp_size_in_bytes == 64 * 32 * 4,
        "a custom policy offloads the f32[64,32] dot output to the host");

  try {
    fy::policies::save_and_offload_only_these_names({"a"}, {"a"}, fy::MemoryKind::device, fy::MemoryKind::pinned_host);
    check(false, "a name in both lists is refused");
  } catch (const fy::Error& e) {
    check(e.code() == fy::ErrorCode::invalid_argument, "a name in both lists is INVALID_ARGUMENT");
  }
}

}  // namespace

int main() {
  unused_name();
  decisions_in_the_ir();
  custom_policies();
  if (failures) std::printf("%d checks failed\n", failures);
  return failures ? 1 : 0;
}
