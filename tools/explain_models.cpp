#include "explain_models.h"

#include <fmt/format.h>

#include "ferry/calibrate.h"
#include "ferry/error.h"
#include "ferry/explain.h"
#include "ferry/memory_html.h"
#include "training.h"

namespace ferry::tools {
namespace {

namespace fm = ferry::models;

// The models' own name policies, as rows beside the built-in ones.
std::vector<ExplainPolicy> name_policies(const std::vector<std::string>& names) {
  return {{"names saved", policies::save_only_these_names(names)},
          {"names offloaded",
           policies::save_and_offload_only_these_names({}, names, MemoryKind::device, MemoryKind::pinned_host)}};
}

std::string rates_line(const CompileOptions& options) {
  const Rates o = options.rates.value_or(Rates{});
  return fmt::format("rates: dot {:.3g} FLOP/s (+{:.3g} s per product), other {:.3g} FLOP/s, {:.3g} transcendentals/s, "
                     "memory {:.3g} B/s, link {:.3g} B/s",
                     o.compute_flops_per_s, o.dot_product_seconds, o.vector_flops_per_s, o.transcendentals_per_s,
                     o.memory_bytes_per_s, o.link_bandwidth_bytes_per_s);
}

}  // namespace

int run_explain(const ExplainOptions& options) {
  CompileOptions compile = calibrated_options({.device_memory_limit = options.limit});
  LowerUnderPolicy lower;
  std::vector<ExplainPolicy> extra;
  if (options.model == "gpt") {
    fm::GptConfig c;
    if (options.small) c = {.vocab = 16, .d_model = 32, .heads = 2, .seq = 16, .batch = 2, .layers = 2};
    fmt::print("gpt: d_model {}, {} heads, sequence {}, batch {}, {} layers, vocabulary {}; one training step "
               "(loss, gradients and Adam update)\n",
               c.d_model, c.heads, c.seq, c.batch, c.layers, c.vocab);
    lower = [c](const std::optional<Policy>& p) { return fm::lower_gpt_train_step(c, p); };
    extra = name_policies(fm::gpt_names());
  } else if (options.model == "scan_mlp") {
    fm::ScanMlpConfig c;
    if (options.small) c = {.batch = 16, .width = 32, .hidden = 64, .layers = 3};
    fmt::print("scan_mlp: batch {}, width {}, hidden {}, {} layers; gradient of sum(output) w.r.t. w1, w2\n", c.batch,
               c.width, c.hidden, c.layers);
    lower = [c](const std::optional<Policy>& p) { return fm::lower_scan_mlp_grad(c, p); };
    extra = name_policies(fm::scan_mlp_names());
  } else {
    throw Error(ErrorCode::invalid_argument,
                fmt::format("explain: unknown model \"{}\" (the built-in models are gpt and scan_mlp)", options.model));
  }
  std::string source;
  try {
    source = fmt::format("from {}; `ferry calibrate` measures them again", rates_cache_path());
  } catch (const Error&) {
    source = "measured now: no folder to cache them in";  // calibrated_options measured without caching
  }
  fmt::print("{} ({})\n\n", rates_line(compile), source);
  // Before the work: a page that cannot be written would otherwise fail after every compile.
  if (!options.html.empty()) check_memory_html_path(options.html);
  const std::vector<ExplainRow> rows = explain(lower, compile, extra);
  fmt::print("{}", format_explain(rows, options.limit));
  if (!options.html.empty()) {
    save_explain_html(rows, options.limit, options.html);
    fmt::print("the plans drawn on one page: {}\n", options.html);
  }
  return 0;
}

int run_calibrate(int repeats) {
  Rates r = calibrate({.repeats = repeats});
  std::string path = rates_cache_path();
  save_rates(r, path);
  fmt::print("compute_flops_per_s        {:.4g}  (f32 dot_general 512x512x512)\n", r.compute_flops_per_s);
  fmt::print("memory_bytes_per_s         {:.4g}  (elementwise ops over 16 MiB arrays, unfused)\n", r.memory_bytes_per_s);
  fmt::print("link_bandwidth_bytes_per_s {:.4g}  (device -> pinned_host -> device through the copy queue)\n",
             r.link_bandwidth_bytes_per_s);
  fmt::print("vector_flops_per_s         {:.4g}  (64 adds and multiplies fused over 1 MiB operands)\n", r.vector_flops_per_s);
  fmt::print("transcendentals_per_s      {:.4g}  (tanh over 256 KiB, 16 times)\n", r.transcendentals_per_s);
  fmt::print("dot_product_seconds        {:.4g}  (2048 products of 4x4 matrices)\n", r.dot_product_seconds);
  fmt::print("written to {}\n", path);
  return 0;
}

}  // namespace ferry::tools
