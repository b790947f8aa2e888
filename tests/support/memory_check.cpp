#include "support/memory_check.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

namespace ferry::testing {

std::string stats_mismatch(const MemoryStats& m) {
  std::string out;
  auto side = [&](const char* name, int64_t peak, int64_t argument, int64_t output, int64_t temp, int64_t alias) {
    if (argument < 0 || output < 0 || temp < 0 || alias < 0 || alias > output || peak != argument + output + temp - alias)
      out += fmt::format("{}: peak {} != arguments {} + outputs {} + temporaries {} - aliased {}\n", name, peak, argument,
                         output, temp, alias);
  };
  side("device", m.peak_memory_in_bytes, m.argument_size_in_bytes, m.output_size_in_bytes, m.temp_size_in_bytes,
       m.alias_size_in_bytes);
  side("host", m.host_peak_memory_in_bytes, m.host_argument_size_in_bytes, m.host_output_size_in_bytes,
       m.host_temp_size_in_bytes, m.host_alias_size_in_bytes);
  return out;
}

std::vector<Array> run_checked(const Compiled& compiled, const std::vector<Array>& args) {
  std::vector<Array> out = compiled.run(args);
  MemoryStats planned = compiled.memory_analysis();
  ExecutionStats measured = compiled.execution_stats();
  EXPECT_EQ(stats_mismatch(planned), "") << compiled.memory_report();
  EXPECT_EQ(measured.device_high_water_bytes, planned.peak_memory_in_bytes) << compiled.memory_report();
  EXPECT_EQ(measured.host_high_water_bytes, planned.host_peak_memory_in_bytes) << compiled.memory_report();
  return out;
}

std::string high_water_mismatch(const Compiled& compiled) {
  MemoryStats planned = compiled.memory_analysis();
  ExecutionStats measured = compiled.execution_stats();
  std::string out = stats_mismatch(planned);
  if (measured.device_high_water_bytes != planned.peak_memory_in_bytes ||
      measured.host_high_water_bytes != planned.host_peak_memory_in_bytes)
    out += fmt::format("measured device high-water {} bytes, planned {}; measured host {} bytes, planned {}\n",
                       measured.device_high_water_bytes, planned.peak_memory_in_bytes, measured.host_high_water_bytes,
                       planned.host_peak_memory_in_bytes);
  return out.empty() ? out : out + compiled.memory_report();
}

}  // namespace ferry::testing
