// The command line's byte counts: units, fractions, and everything else refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

}  // namespace
