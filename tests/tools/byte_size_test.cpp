// The command line's byte counts: units, fractions, and everything else refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>

#include "byte_size.h"
#include "support/error_of.h"

namespace ft = ferry::tools;
using ::testing::HasSubstr;
using ferry::testing::error_of;

namespace {

TEST(ByteSize, NumbersAndUnits) {
  EXPECT_EQ(ft::parse_byte_size("0", "--limit"), 0);
  EXPECT_EQ(ft::parse_byte_size("67108864", "--limit"), 67108864);
  EXPECT_EQ(ft::parse_byte_size("64MiB", "--limit"), 64 << 20);
  EXPECT_EQ(ft::parse_byte_size("64mib", "--limit"), 64 << 20);
  EXPECT_EQ(ft::parse_byte_size("64 MiB", "--limit"), 64 << 20);
  EXPECT_EQ(ft::parse_byte_size("1.5GiB", "--limit"), int64_t{3} << 29);
  EXPECT_EQ(ft::parse_byte_size("512KiB", "--limit"), 512 << 10);
  EXPECT_EQ(ft::parse_byte_size("2MB", "--limit"), 2000000);
  EXPECT_EQ(ft::parse_byte_size("100B", "--limit"), 100);
  EXPECT_EQ(ft::parse_byte_size("0.5", "--limit"), 0);  // whole bytes, rounded down
}

TEST(ByteSize, AnythingElseIsInvalidArgumentNamingTheOption) {
  for (const char* bad : {"", "MiB", "-1", "-1MiB", "12XB", "1e9", "inf", "nan", "0x10", "1..5", "1.5.2MiB",
                          "99999999TiB", "64MiBs", "64  MiB"}) {
    ferry::Error e = error_of([&] { ft::parse_byte_size(bad, "--limit"); });
    EXPECT_EQ(e.code(), ferry::ErrorCode::invalid_argument) << bad;
    EXPECT_THAT(e.message(), HasSubstr("--limit")) << bad;
  }
}

// Issue 32: a count beyond int64 was silently unlimited. It is an error naming the option (strtoull's
// ERANGE included), and whole numbers are exact up to the limit (a double would round them).
TEST(ByteSize, OutOfRangeIsAnErrorAndLargeCountsAreExact) {
  for (const char* huge : {"99999999999999999999", "9223372036854775808", "8388608TiB", "9223372036854775807.5KiB",
                           "18446744073709551616"}) {
    ferry::Error e = error_of([&] { ft::parse_byte_size(huge, "--device-memory-limit"); });
    EXPECT_EQ(e.code(), ferry::ErrorCode::invalid_argument) << huge;
    EXPECT_THAT(e.message(), HasSubstr("--device-memory-limit is too large")) << huge;
  }
  EXPECT_EQ(ft::parse_byte_size("9223372036854775807", "--limit"), INT64_MAX);
  EXPECT_EQ(ft::parse_byte_size("9007199254740993", "--limit"), int64_t{9007199254740993});
  EXPECT_EQ(ft::parse_byte_size("8388607TiB", "--limit"), int64_t{8388607} << 40);
  EXPECT_EQ(ft::parse_byte_size("1GiB", "--limit"), int64_t{1} << 30);
  EXPECT_EQ(ft::parse_byte_size(".5KiB", "--limit"), 512);
}

TEST(ByteSize, FromTheEnvironment) {
  ::unsetenv("FERRY_TEST_BYTES");
  EXPECT_EQ(ft::byte_size_from_environment("FERRY_TEST_BYTES"), 0);
  ::setenv("FERRY_TEST_BYTES", "2KiB", 1);
  EXPECT_EQ(ft::byte_size_from_environment("FERRY_TEST_BYTES"), 2048);
  ::setenv("FERRY_TEST_BYTES", "99999999999999999999", 1);
  EXPECT_THAT(error_of([] { ft::byte_size_from_environment("FERRY_TEST_BYTES"); }).message(),
              HasSubstr("FERRY_TEST_BYTES is too large"));
  ::unsetenv("FERRY_TEST_BYTES");
}

}  // namespace
