// Calibration: the rates cache (where it lives, what it holds, what a bad one is) and that the
// measurement gives usable rates. No assertion depends on how fast this machine is.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "ferry/calibrate.h"
#include "support/error_of.h"

namespace fy = ferry;
using ::testing::HasSubstr;
using ferry::testing::error_of;

namespace {

// A fresh folder per test, and the cache variables as they were before it.
class RatesCache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ferry_rates_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    for (const char* name : {"FERRY_CACHE_DIR", "XDG_CACHE_HOME", "HOME"}) {
      const char* v = std::getenv(name);
      saved_.push_back(v ? std::optional<std::string>(v) : std::nullopt);
    }
  }
  void TearDown() override {
    const char* names[] = {"FERRY_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
    for (size_t i = 0; i < 3; ++i)
      if (saved_[i]) setenv(names[i], saved_[i]->c_str(), 1);
      else unsetenv(names[i]);
    std::filesystem::remove_all(dir_);
  }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  void write(const std::string& path, const std::string& text) const { std::ofstream(path) << text; }

  std::filesystem::path dir_;
  std::vector<std::optional<std::string>> saved_;
};

TEST_F(RatesCache, PathFollowsTheEnvironmentInOrder) {
  setenv("HOME", "/home/someone", 1);
  unsetenv("FERRY_CACHE_DIR");
  unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(fy::rates_cache_path(), "/home/someone/.cache/ferry/rates.json");
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(fy::rates_cache_path(), "/xdg/ferry/rates.json");
  setenv("FERRY_CACHE_DIR", "/ferry_cache", 1);
  EXPECT_EQ(fy::rates_cache_path(), "/ferry_cache/rates.json");
  unsetenv("FERRY_CACHE_DIR");
  unsetenv("XDG_CACHE_HOME");
  unsetenv("HOME");
  EXPECT_EQ(error_of([] { fy::rates_cache_path(); }).code(), fy::ErrorCode::invalid_argument);
}

TEST_F(RatesCache, SavedRatesLoadBackExactly) {
  fy::Rates r{.compute_flops_per_s = 3.25e10, .memory_bytes_per_s = 7.5e9, .link_bandwidth_bytes_per_s = 1.125e10,
              .vector_flops_per_s = 2.5e9, .transcendentals_per_s = 4.5e8, .dot_product_seconds = 1.5e-7};
  std::string path = file("nested/folder/rates.json");  // folders are created
  fy::save_rates(r, path);
  std::optional<fy::Rates> back = fy::load_rates(path);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->compute_flops_per_s, r.compute_flops_per_s);
  EXPECT_EQ(back->memory_bytes_per_s, r.memory_bytes_per_s);
  EXPECT_EQ(back->link_bandwidth_bytes_per_s, r.link_bandwidth_bytes_per_s);
  EXPECT_EQ(back->vector_flops_per_s, r.vector_flops_per_s);
  EXPECT_EQ(back->transcendentals_per_s, r.transcendentals_per_s);
  EXPECT_EQ(back->dot_product_seconds, r.dot_product_seconds);
  EXPECT_FALSE(fy::load_rates(file("absent.json")).has_value());
}

// A cache written before the vector, transcendental and per-product rates existed is measured
// again, not an error; one whose old rates are bad still is.
TEST_F(RatesCache, AnOlderCacheIsStale) {
  std::string path = file("rates.json");
  write(path, R"({"compute_flops_per_s": 1e9, "memory_bytes_per_s": 2e9, "link_bandwidth_bytes_per_s": 3e9})");
  EXPECT_FALSE(fy::load_rates(path).has_value());
  write(path, R"({"compute_flops_per_s": 1e9, "memory_bytes_per_s": -2e9, "link_bandwidth_bytes_per_s": 3e9})");
  EXPECT_EQ(error_of([&] { fy::load_rates(path); }).code(), fy::ErrorCode::invalid_argument);
  // All six rates, measured by the first calibration programs (no "calibration" version, or
  // another one): the bandwidth from a fused chain means nothing to today's cost model.
  const char* six = R"("compute_flops_per_s": 1e9, "memory_bytes_per_s": 2e9, "link_bandwidth_bytes_per_s": 3e9,
                       "vector_flops_per_s": 4e9, "transcendentals_per_s": 5e8, "dot_product_seconds": 1e-6)";
  write(path, std::string("{") + six + "}");
  EXPECT_FALSE(fy::load_rates(path).has_value());
  write(path, std::string("{") + six + R"(, "calibration": 1})");
  EXPECT_FALSE(fy::load_rates(path).has_value());
  // What save_rates writes is current.
  fy::save_rates({.compute_flops_per_s = 1e9, .memory_bytes_per_s = 2e9, .link_bandwidth_bytes_per_s = 3e9,
                  .vector_flops_per_s = 4e9, .transcendentals_per_s = 5e8, .dot_product_seconds = 1e-6},
                 path);
  ASSERT_TRUE(fy::load_rates(path).has_value());
  EXPECT_EQ(fy::load_rates(path)->vector_flops_per_s, 4e9);
}

TEST_F(RatesCache, ABadCacheIsInvalidArgumentNamingTheFile) {
  std::string path = file("rates.json");
  for (const char* text : {"not json", "{}", R"({"compute_flops_per_s": 1e9, "memory_bytes_per_s": "fast",
                                                  "link_bandwidth_bytes_per_s": 1e9})",
                           R"({"compute_flops_per_s": 1e9, "memory_bytes_per_s": -1, "link_bandwidth_bytes_per_s": 1e9})",
                           R"({"compute_flops_per_s": 0, "memory_bytes_per_s": 1e9, "link_bandwidth_bytes_per_s": 1e9})"}) {
    write(path, text);
    fy::Error e = error_of([&] { fy::load_rates(path); });
    EXPECT_EQ(e.code(), fy::ErrorCode::invalid_argument) << text;
    EXPECT_THAT(e.message(), HasSubstr(path)) << text;
  }
  // calibrated_options reads the same file and says the same.
  setenv("FERRY_CACHE_DIR", dir_.c_str(), 1);
  EXPECT_EQ(error_of([] { fy::calibrated_options(); }).code(), fy::ErrorCode::invalid_argument);
}

TEST_F(RatesCache, CalibratedOptionsTakeTheCachedRatesAndKeepTheRest) {
  setenv("FERRY_CACHE_DIR", dir_.c_str(), 1);
  fy::save_rates({.compute_flops_per_s = 1.5e9, .memory_bytes_per_s = 2.5e9, .link_bandwidth_bytes_per_s = 3.5e9,
                  .vector_flops_per_s = 4.5e9, .transcendentals_per_s = 5.5e8, .dot_product_seconds = 6.5e-7},
                 file("rates.json"));
  fy::CompileOptions options = fy::calibrated_options({.device_memory_limit = 4096, .fit_to_limit = true});
  ASSERT_TRUE(options.rates.has_value());
  const fy::Rates& o = *options.rates;
  // Values no measurement gives: these come from the cache, not from a calibration.
  EXPECT_EQ(o.compute_flops_per_s, 1.5e9);
  EXPECT_EQ(o.memory_bytes_per_s, 2.5e9);
  EXPECT_EQ(o.link_bandwidth_bytes_per_s, 3.5e9);
  EXPECT_EQ(o.vector_flops_per_s, 4.5e9);
  EXPECT_EQ(o.transcendentals_per_s, 5.5e8);
  EXPECT_EQ(o.dot_product_seconds, 6.5e-7);
  const fy::CompileOptions& o_options = options;
  EXPECT_EQ(o_options.device_memory_limit, 4096);
  EXPECT_TRUE(o_options.fit_to_limit);
}

TEST_F(RatesCache, WithoutACacheTheRatesAreMeasuredOnceAndCached) {
  setenv("FERRY_CACHE_DIR", dir_.c_str(), 1);
  fy::CompileOptions options = fy::calibrated_options();
  ASSERT_TRUE(options.rates.has_value());
  const fy::Rates& o = *options.rates;
  for (double rate : {o.compute_flops_per_s, o.memory_bytes_per_s, o.link_bandwidth_bytes_per_s, o.vector_flops_per_s,
                      o.transcendentals_per_s, o.dot_product_seconds}) {
    EXPECT_GT(rate, 0);
    EXPECT_TRUE(std::isfinite(rate));
  }
  std::optional<fy::Rates> cached = fy::load_rates(file("rates.json"));
  ASSERT_TRUE(cached.has_value());
  EXPECT_EQ(cached->compute_flops_per_s, o.compute_flops_per_s);
  EXPECT_EQ(cached->memory_bytes_per_s, o.memory_bytes_per_s);
  EXPECT_EQ(cached->link_bandwidth_bytes_per_s, o.link_bandwidth_bytes_per_s);
  EXPECT_EQ(cached->transcendentals_per_s, o.transcendentals_per_s);
  // The measured rates compile programs (they pass compile's own checks).
  EXPECT_NO_THROW(fy::jit([](fy::Tensor x) { return x * 2.0; }).lower(fy::ShapeDtype{{4}}).compile(options));
}

TEST(Calibrate, BadArgumentsAreErrors) {
  EXPECT_EQ(error_of([] { fy::calibrate({.repeats = 0}); }).code(), fy::ErrorCode::invalid_argument);
  EXPECT_EQ(error_of([] { fy::calibrate({.backend = "tpu"}); }).code(), fy::ErrorCode::unimplemented);
  for (double bad : {0.0, -1.0, static_cast<double>(NAN), static_cast<double>(INFINITY)}) {
    fy::Rates r{.compute_flops_per_s = 1e9, .memory_bytes_per_s = bad, .link_bandwidth_bytes_per_s = 1e9,
                .vector_flops_per_s = 1e9, .transcendentals_per_s = 1e9, .dot_product_seconds = 1e-6};
    fy::Error e = error_of([&] { fy::with_rates({}, r); });
    EXPECT_EQ(e.code(), fy::ErrorCode::invalid_argument);
    EXPECT_THAT(e.message(), HasSubstr("memory_bytes_per_s"));
    EXPECT_EQ(error_of([&] { fy::save_rates(r, "/tmp/ferry_never_written.json"); }).code(),
              fy::ErrorCode::invalid_argument);
  }
}

}  // namespace
