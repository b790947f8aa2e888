// Residual bytes and recompute FLOPs per checkpoint policy, for a 4-layer MLP (each layer
// checkpointed) and an 8-layer scan (each step checkpointed). Prints a Markdown table.
//   residual bytes: what the backward pass keeps (saved_residuals), split by memory kind;
//   recompute FLOPs: FLOPs of the equations the backward pass recomputes (cost model, scan bodies
//   counted once per step), from the compiled training step.
#include <cstdio>
#include <string>
#include <vector>

#include "ferry/ferry.h"
#include "ir/program.h"
#include "prims/registry.h"
#include "driver/lowered.h"

namespace fy = ferry;

namespace {

constexpr int kBatch = 64, kWidth = 256;

double recompute_flops(const ferry::ir::Program& p) {
  double total = 0;
  for (const auto& eq : p.equations) {
    if (eq.prim == fy::Primitive::scan) {
      auto len = static_cast<double>(std::get<ferry::ir::ScanParams>(eq.params).length);
      total += len * recompute_flops(*eq.subprograms[0]);
    } else if (eq.rematerialized) {
      total += ferry::prims::cost(eq, p).flops;
    }
  }
  return total;
}

fy::Tensor layer(fy::Tensor x, fy::Tensor w) {
  fy::Tensor h = fy::checkpoint_name(fy::matmul(x, w), "x");
  return fy::tanh(h);
}

struct Row {
  std::string policy;
  double device_bytes = 0, host_bytes = 0, flops = 0;
};

template <class Loss, class... Specs> Row measure(const fy::Policy& policy, Loss loss, const Specs&... specs) {
  Row row{policy.name()};
  for (const fy::Residual& r : fy::saved_residuals(loss, specs...)) {
    double bytes = static_cast<double>(fy::num_elements(r.type.shape) * static_cast<int64_t>(fy::dtype_size(r.type.dtype)));
    (r.type.kind == fy::MemoryKind::device ? row.device_bytes : row.host_bytes) += bytes;
  }
  auto step = fy::jit([&](const auto&... args) { return fy::grad(loss, fy::argnums<1>)(args...); });
  fy::Compiled c = step.lower(specs...).compile();
  row.flops = recompute_flops(*fy::parse_program(c.as_text()).impl().program);
  return row;
}

void print_table(const char* title, const std::vector<Row>& rows) {
  std::printf("\n### %s\n\n| policy | residual bytes on device | residual bytes on host | recompute FLOPs |\n|---|---:|---:|---:|\n", title);
  for (const Row& r : rows)
    std::printf("| %s | %.0f | %.0f | %.3g |\n", r.policy.c_str(), r.device_bytes, r.host_bytes, r.flops);
}

}  // namespace

int main() {
  using namespace fy::policies;
  std::vector<fy::Policy> policies = {everything_saveable,
                                      dots_saveable,
                                      dots_with_no_batch_dims_saveable,
                                      save_only_these_names({"x"}),
                                      offload_dot_with_no_batch_dims(fy::MemoryKind::device, fy::MemoryKind::pinned_host),
                                      save_and_offload_only_these_names({}, {"x"}, fy::MemoryKind::device,
                                                                        fy::MemoryKind::pinned_host),
                                      nothing_saveable};
  fy::ShapeDtype x{{kBatch, kWidth}};
  std::vector<fy::ShapeDtype> ws(4, fy::ShapeDtype{{kWidth, kWidth}});
  fy::ShapeDtype stacked{{8, kWidth, kWidth}};

  std::vector<Row> mlp, scanned;
  for (const fy::Policy& p : policies) {
    auto mlp_loss = [p](fy::Tensor x, std::vector<fy::Tensor> w) {
      for (auto& wl : w) x = fy::checkpoint(layer, p)(x, wl);
      return fy::sum(x);
    };
    mlp.push_back(measure(p, mlp_loss, x, ws));
    auto scan_loss = [p](fy::Tensor x, fy::Tensor w) {
      auto step = fy::checkpoint([](fy::Tensor h, fy::Tensor wl) { return std::pair{layer(h, wl), fy::Tensor{}}; }, p);
      return fy::sum(fy::scan(step, x, w).carry);
    };
    scanned.push_back(measure(p, scan_loss, x, stacked));
  }
  std::printf("f32, batch %d, width %d; arguments (inputs and weights) included in device bytes.\n", kBatch, kWidth);
  print_table("4-layer MLP, each layer checkpointed", mlp);
  print_table("8-layer scan, each step checkpointed", scanned);
  return 0;
}
