// `ferry demo`: the main job end to end on a built-in model.
#pragma once

namespace ferry::tools {

struct DemoOptions {
  int steps = 300;
  double min_factor = 1.0;  // exit non-zero unless the loss falls by at least this factor
  bool mlp = false;  // the small MLP walk-through instead (trace, print, train)
};

int run_demo(const DemoOptions& options);
int run_mlp_demo();

}  // namespace ferry::tools
