#include "ferry/machine.h"

#include <fmt/format.h>

#include "runtime/cpu/cpu_features.h"
#include "runtime/cpu/dot_path.h"
#include "runtime/cpu/parallel.h"

namespace ferry {

std::string MachineInfo::summary() const {
  return fmt::format("{}; {}; {} thread{}; {}", processor, isa, threads, threads == 1 ? "" : "s", dot_general);
}

MachineInfo machine_info() {
  namespace cpu = runtime::cpu;
  const cpu::CpuFeatures& f = cpu::cpu_features();
  MachineInfo m;
  m.processor = fmt::format("{} ({} family {} model {})", f.brand.empty() ? "unknown processor" : f.brand, f.vendor,
                            f.family, f.model);
  m.isa = f.isa_string();
  m.dot_general = cpu::dot_path_summary();
  m.threads = cpu::num_threads();
  const cpu::BlasCore blas = cpu::openblas_core();
  if (!blas.shortfall.empty())
    m.warnings.push_back(blas.shortfall + (cpu::chosen_dot_path() == cpu::DotPath::openblas
                                               ? ": every product runs on it (FERRY_DOT_PATH=openblas)"
                                               : ": only f64 products run on it"));
  return m;
}

}  // namespace ferry
