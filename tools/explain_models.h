// `ferry explain` and `ferry calibrate`: what each checkpoint policy would cost on a built-in
// model before anything runs, and the rates those estimates use.
#pragma once

#include <cstdint>
#include <string>

namespace ferry::tools {

struct ExplainOptions {
  std::string model;      // "gpt" or "scan_mlp"
  int64_t limit = 0;      // device bytes; 0: no limit
  bool small = false;     // the suite's quick configurations (tests)
  std::string html;       // where to write the plans drawn on one page (ferry::explain_html); "": nowhere
};

// Prints the model, the rates and ferry::format_explain's table (and writes the page, if asked). INVALID_ARGUMENT for an unknown model.
int run_explain(const ExplainOptions& options);

// Measures the rates, prints them and writes the cache (ferry::rates_cache_path()).
int run_calibrate(int repeats);

}  // namespace ferry::tools
