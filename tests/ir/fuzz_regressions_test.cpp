// Every input in fuzz/regressions/ (crashes the fuzzers found, and edge cases worth keeping) goes
// through what the compile-and-run fuzzer does with it: it must parse, compile and run, or throw a
// ferry::Error. A crash, a sanitizer report or another exception fails the suite.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fuzz_input.h"

namespace {

TEST(FuzzRegressions, EveryInputParsesCompilesAndRunsOrIsAFerryError) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(FERRY_FUZZ_REGRESSIONS)) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty()) << "no inputs in " << FERRY_FUZZ_REGRESSIONS;
  int errors = 0;
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    try {
      ferry::fuzz::parse_compile_run(text.str());
    } catch (const ferry::Error& e) {
      ++errors;
      EXPECT_NE(e.code(), ferry::ErrorCode::internal) << path.filename() << ": " << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << path.filename() << ": not a ferry::Error: " << e.what();
    }
  }
  std::printf("%zu regression inputs, %d rejected with a ferry::Error\n", files.size(), errors);
}

}  // namespace
