#include "support/memory_check.h"

#include <gtest/gtest.h>

namespace ferry::testing {

std::vector<Array> run_checked(const Compiled& compiled, const std::vector<Array>& args) {
  std::vector<Array> out = compiled.run(args);
  MemoryStats planned = compiled.memory_analysis();
  ExecutionStats measured = compiled.execution_stats();
  EXPECT_EQ(measured.device_high_water_bytes, planned.peak_memory_in_bytes) << compiled.memory_report();
  EXPECT_EQ(measured.host_high_water_bytes, planned.host_peak_memory_in_bytes) << compiled.memory_report();
  return out;
}

}  // namespace ferry::testing
