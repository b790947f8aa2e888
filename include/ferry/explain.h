// "What to expect" before running: one training step compiled under each checkpoint policy and
// under policies::automatic, with what each plan needs and costs by the compiler's own figures.
//
//   auto lower = [&](const std::optional<ferry::Policy>& p) { return step_for(p).lower(args...); };
//   ferry::CompileOptions o = ferry::calibrated_options();
//   o.device_memory_limit = 64 << 20;
//   std::vector<ferry::ExplainRow> rows = ferry::explain(lower, o);
//   std::cout << ferry::format_explain(rows, o.device_memory_limit);
//
// Built-in policies are compiled without the limit, so that each row has its real peak and "fits"
// can say no; `automatic` is compiled with the limit (and with fit_to_limit as given), which is
// how a user would run it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ferry/checkpoint.h"
#include "ferry/jit.h"

namespace ferry {

// Lowers the user's step with its checkpoints under this policy; nullopt: without checkpoints.
using LowerUnderPolicy = std::function<Lowered(const std::optional<Policy>&)>;

// A policy for a row of its own (e.g. a model's save- or offload-these-names policy).
struct ExplainPolicy {
  std::string name;
  Policy policy;
};

struct ExplainRow {
  std::string policy;   // "no checkpoint", the built-in policy's name, a caller's name, "automatic"
  bool fits = false;    // device_peak <= the limit (always, without a limit); false when refused
  std::string error;    // the RESOURCE_EXHAUSTED message when the plan was refused
  int64_t device_peak = 0;  // memory_analysis().peak_memory_in_bytes
  int64_t host_peak = 0;    // memory_analysis().host_peak_memory_in_bytes (offloaded residuals)
  double flops = 0;             // cost_analysis(): everything the step computes
  double recompute_flops = 0;   // of which the backward pass recomputes
  int64_t bytes_copied = 0;     // to host + back to the device
  double estimated_seconds = 0; // cost_analysis().estimated_seconds at the options' rates
  double exposed_copy_seconds = 0;
  std::optional<Compiled> compiled;  // the program, to run it (absent when refused)
};

// One row per policy, in this order: no checkpoint, everything_saveable, nothing_saveable,
// dots_saveable, dots_with_no_batch_dims_saveable, offload_dot_with_no_batch_dims(device,
// pinned_host), each of `extra`, automatic. A RESOURCE_EXHAUSTED from compiling a row makes that
// row not fit (with the message); other errors (a policy that throws, a step that does not trace)
// propagate. INVALID_ARGUMENT for an empty `lower`, a negative limit, or an extra policy with an
// empty or repeated name.
std::vector<ExplainRow> explain(const LowerUnderPolicy& lower, const CompileOptions& options,
                                const std::vector<ExplainPolicy>& extra = {});

// One row: the step lowered under `policy` (nullopt: no checkpoint) and compiled with `options`,
// limit included; a RESOURCE_EXHAUSTED is a refused row. E.g. automatic at several budgets.
ExplainRow explain_policy(const LowerUnderPolicy& lower, const std::string& name, const std::optional<Policy>& policy,
                          const CompileOptions& options);

// The rows' plans on one memory page (ferry/memory_html.h) as small multiples on one scale, with
// the limit drawn; a refused row shows its message in its place.
std::string explain_html(const std::vector<ExplainRow>& rows, int64_t device_memory_limit);
// explain_html() written to path (atomically); INVALID_ARGUMENT when it cannot be written there.
void save_explain_html(const std::vector<ExplainRow>& rows, int64_t device_memory_limit, const std::string& path);

// The rows as a text table (KiB or MiB, MFLOP, ms), then the fastest estimated plan that fits.
std::string format_explain(const std::vector<ExplainRow>& rows, int64_t device_memory_limit);

}  // namespace ferry
