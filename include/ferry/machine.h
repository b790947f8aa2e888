// The machine the CPU backend runs on and the kernel code it chose for it, so that a figure can
// name both and a slow library choice is never silent (`ferry info` prints this; the demo's header
// line is summary()).
#pragma once

#include <string>
#include <vector>

namespace ferry {

struct MachineInfo {
  std::string processor;    // brand, vendor, family and model, e.g. "AMD EPYC (AuthenticAMD family 26 model 2)"
  std::string isa;          // the instruction sets kernels may use, read from cpuid and the OS
  std::string dot_general;  // the library, path and kernels of matrix products
  int threads = 1;          // the CPU kernels' threads (FERRY_NUM_THREADS, else the hardware's)
  // What runs below what the processor offers, e.g. a BLAS that did not recognise it.
  std::vector<std::string> warnings;

  // One line: processor, ISA, threads and the dot_general path.
  std::string summary() const;
};

// Reads the processor (cpuid) and the kernels chosen for it. INVALID_ARGUMENT where
// FERRY_DOT_PATH names a path that does not exist or that this processor lacks.
MachineInfo machine_info();

}  // namespace ferry
