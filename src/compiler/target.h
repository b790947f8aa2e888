// The machine a program is compiled for, as the compile driver resolves it once from the options
// and the backend (driver/target.h) and hands it to every pass: no pass looks a backend up.
#pragma once

#include <cstdint>
#include <string>

#include "compiler/memory_plan.h"
#include "ferry/options.h"

namespace ferry::compiler {

struct Target {
  std::string backend = "cpu";
  // The cost model's rates: CompileOptions::rates where given, else the backend's. The default is
  // the reference CPU machine's (ferry::Rates' defaults), which is what tests of single passes use.
  Rates rates;
  // The share of compute throughput an asynchronous copy takes while it runs: 0 where copy engines
  // of their own move the bytes (a GPU's DMA), 1/threads where a host thread does (the CPU).
  double copy_compute_share = 0;
  // Copies from or to unpinned_host memory block the host (and so hide behind no compute).
  bool unpinned_copies_synchronous = false;
  int64_t device_memory_limit = 0;  // bytes; 0: none (on a GPU, the driver puts its free memory here)
  bool fit_to_limit = false;
  bool fuse = true;                 // fusion asked for, and the backend has a fused kernel
  WorkspaceFn workspace;            // the scratch its kernels declare (empty: none)
};

}  // namespace ferry::compiler
