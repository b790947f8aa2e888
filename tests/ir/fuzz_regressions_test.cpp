// Every input in fuzz/regressions/ (crashes the fuzzers found, and edge cases worth keeping) goes
// through what the compile-and-run fuzzer does with it: it must parse, compile and run, or throw a
// ferry::Error. A crash, a sanitizer report or another exception fails the suite.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fuzz_input.h"
#include "ir/parser.h"
#include "driver/lowered.h"

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

// The compile-and-run fuzzer's first crash: copy_done named another source than its copy_start's,
// so the plan let the copied value's buffer be reused mid-copy; the runtime then threw INTERNAL
// while the copy thread still read an arena the unwinding freed (heap-use-after-free). Now the
// verifier rejects the pairing, and a run that throws drains its copies first.
TEST(FuzzRegressions, CopyDoneMustNameItsCopyStartsSource) {
  std::ifstream in(std::string(FERRY_FUZZ_REGRESSIONS) + "/copy_done_names_another_source.ir");
  std::stringstream text;
  text << in.rdbuf();
  try {
    ferry::detail::parse_program_with_compiler_ops(text.str());
    ADD_FAILURE() << "parsed";
  } catch (const ferry::Error& e) {
    EXPECT_EQ(e.code(), ferry::ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("waits for the copy of %2 (%4 = copy_start) but names %3 as its source"),
              std::string::npos) << e.what();
  }
}

}  // namespace

namespace {

// A user's text with the compiler's own primitives: once `fused` whose body multiplies by a
// constant was accepted, and simplify then failed with INTERNAL. Now the parser refuses it, naming
// the primitive and where it is; pass tests still read such text (ir::parse's compiler_ops).
TEST(FuzzRegressions, CompilerOnlyPrimitivesInAUsersTextAreRefused) {
  std::ifstream in(std::string(FERRY_FUZZ_REGRESSIONS) + "/fused_in_user_text.ir");
  std::stringstream text;
  text << in.rdbuf();
  for (const std::string& t : {text.str(), std::string("program @p(%0: f32[2]) {\n  %1 = copy_start[dst=pinned_host] %0 : f32[2]{pinned_host}\n  %2 = copy_done %1, %0 : f32[2]{pinned_host}\n  return %2\n}\n")}) {
    try {
      ferry::parse_program(t);
      ADD_FAILURE() << "parsed:\n" << t;
    } catch (const ferry::Error& e) {
      EXPECT_EQ(e.code(), ferry::ErrorCode::invalid_argument) << e.what();
      EXPECT_NE(std::string(e.what()).find("is made by the compiler"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
    }
  }
  // The same text still parses for the passes' own tests.
  EXPECT_NO_THROW(ferry::ir::parse(text.str()));
}

}  // namespace
