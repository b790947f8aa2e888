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
  const cpu::DotPath path = cpu::chosen_dot_path();
  if (path != cpu::widest_dot_path() && path != cpu::DotPath::openblas)
    m.warnings.push_back(fmt::format("FERRY_DOT_PATH={} holds matrix products below this processor's widest path, {}",
                                     cpu::dot_path_name(path), cpu::dot_path_name(cpu::widest_dot_path())));
  if (!blas.shortfall.empty()) m.warnings.push_back(blas.shortfall);
  return m;
}

}  // namespace ferry
