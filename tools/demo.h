// `ferry demo`: the main job end to end on a built-in model.
#pragma once

#include <string>

namespace ferry::tools {

struct DemoOptions {
  int steps = 300;
  double min_factor = 1.0;  // exit non-zero unless the loss falls by at least this factor
  bool mlp = false;  // the small MLP walk-through instead (trace, print, train)
  // Where the trained GPT (parameters and Adam state, safetensors) is saved; empty: not saved.
  std::string save_path = "ferry-demo-gpt.safetensors";
  // A checkpoint a previous demo saved: training continues from it for `steps` more steps (the
  // policy table is skipped; the batches are the ones the uninterrupted run would have seen).
  std::string resume_path;
  bool print_losses = false;  // every step's loss, exactly, one line each (to compare runs)
  // Where the page drawing the plan of the step it trains with goes (Compiled::save_memory_html),
  // its last step's timeline beside it; the timeline's Chrome trace goes beside the page. "": neither.
  std::string html_path = "ferry-demo-memory.html";
  // --processes: train data-parallel over the processes mpirun started, sharing the state as
  // `sharding` says (replicated, optimizer_state, gradients or parameters).
  bool processes = false;
  std::string sharding = "replicated";
  std::string json_path;  // with --processes: process 0 writes its figures there (bench/distributed)
};

int run_demo(const DemoOptions& options);
int run_demo_processes(const DemoOptions& options);
int run_mlp_demo();

}  // namespace ferry::tools
