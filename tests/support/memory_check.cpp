#include "support/memory_check.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

namespace ferry::testing {

std::vector<Array> run_checked(const Compiled& compiled, const std::vector<Array>& args) {
  std::vector<Array> out = compiled.run(args);
  MemoryStats planned = compiled.memory_analysis();
  ExecutionStats measured = compiled.execution_stats();
  EXPECT_EQ(measured.device_high_water_bytes, planned.peak_memory_in_bytes) << compiled.memory_report();
  EXPECT_EQ(measured.host_high_water_bytes, planned.host_peak_memory_in_bytes) << compiled.memory_report();
  return out;
}

std::string high_water_mismatch(const Compiled& compiled) {
  MemoryStats planned = compiled.memory_analysis();
  ExecutionStats measured = compiled.execution_stats();
  if (measured.device_high_water_bytes == planned.peak_memory_in_bytes &&
      measured.host_high_water_bytes == planned.host_peak_memory_in_bytes)
    return "";
  return fmt::format("measured device high-water {} bytes, planned {}; measured host {} bytes, planned {}\n{}",
                     measured.device_high_water_bytes, planned.peak_memory_in_bytes, measured.host_high_water_bytes,
                     planned.host_peak_memory_in_bytes, compiled.memory_report());
}

}  // namespace ferry::testing
