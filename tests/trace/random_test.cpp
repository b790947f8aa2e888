// jax.random compatibility: keys, split, fold_in, bits, uniform, normal, bernoulli and randint
// equal JAX's outputs (0.10.2 with jax_threefry_partitionable=True, stored by
// bench/peers/nn_reference.py) for several keys.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "ferry/ferry.h"
#include "support/error_of.h"
#include "support/jax_nn_reference.h"

namespace fy = ferry;
using fy::testing::error_of;
using fy::testing::jax_nn_reference;
using fy::testing::ref_floats;
using fy::testing::ref_vector;
using fy::testing::ref_words;
using fy::testing::run_once;
using ::testing::HasSubstr;

namespace {

// Bits of a float, for exact comparisons.
uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(Random, TheReferenceIsTheDocumentedJax) {
  EXPECT_EQ(jax_nn_reference()["jax_version"], "0.10.2");
  EXPECT_EQ(jax_nn_reference()["threefry_partitionable"], true);
}

TEST(Random, KeysSplitFoldInAndBitsEqualJaxBitForBit) {
  for (const auto& e : jax_nn_reference()["random"]) {
    const int64_t seed = e["seed"].get<int64_t>();
    SCOPED_TRACE("seed " + std::to_string(seed));
    EXPECT_EQ(fy::random::key_data(seed).to_vector<int32_t>(), ref_words(e["key"]));
    auto out = run_once([&](fy::Tensor k) {
      return std::vector<fy::Tensor>{fy::random::key(seed), fy::random::split(k, 3), fy::random::fold_in(k, 5u),
                                     fy::random::fold_in(k, 4000000000u), fy::random::bits(k, {7}),
                                     fy::random::bits(k, {2, 3})};
    }, fy::random::key_data(seed));
    EXPECT_EQ(out[0].to_vector<int32_t>(), ref_words(e["key"]));
    EXPECT_EQ(out[1].shape(), (fy::Shape{3, 2}));
    EXPECT_EQ(out[1].to_vector<int32_t>(), ref_words(e["split3"]));
    EXPECT_EQ(out[2].to_vector<int32_t>(), ref_words(e["fold_in_5"]));
    EXPECT_EQ(out[3].to_vector<int32_t>(), ref_words(e["fold_in_big"]));
    EXPECT_EQ(out[4].to_vector<int32_t>(), ref_words(e["bits_7"]));
    EXPECT_EQ(out[5].shape(), (fy::Shape{2, 3}));
    EXPECT_EQ(out[5].to_vector<int32_t>(), ref_words(e["bits_2x3"]));
  }
}

TEST(Random, UniformBernoulliAndRandintEqualJaxBitForBit) {
  for (const auto& e : jax_nn_reference()["random"]) {
    const int64_t seed = e["seed"].get<int64_t>();
    SCOPED_TRACE("seed " + std::to_string(seed));
    auto out = run_once([&](fy::Tensor k) {
      return std::vector<fy::Tensor>{fy::random::uniform(k, {2, 5}), fy::random::uniform(k, {6}, fy::DType::f32, -2.0, 3.0),
                                     fy::convert(fy::random::bernoulli(k, 0.3, {10}), fy::DType::i32), fy::random::randint(k, {8}, -5, 17),
                                     fy::random::randint(k, {5}, 0, 2147483647)};
    }, fy::random::key_data(seed));
    auto check_floats = [](const fy::Array& a, const nlohmann::json& want) {
      std::vector<float> got = a.to_vector<float>(), w = ref_floats(want);
      ASSERT_EQ(got.size(), w.size());
      for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(bits_of(got[i]), bits_of(w[i])) << i << ": " << got[i] << " vs " << w[i];
    };
    check_floats(out[0], e["uniform_2x5"]);
    check_floats(out[1], e["uniform_m2_3_6"]);
    std::vector<bool> want_b = ref_vector<bool>(e["bernoulli_03_10"]);
    std::vector<int32_t> got_b = out[2].to_vector<int32_t>();
    ASSERT_EQ(got_b.size(), want_b.size());
    for (size_t i = 0; i < want_b.size(); ++i) EXPECT_EQ(got_b[i] != 0, want_b[i]) << i;
    EXPECT_EQ(out[3].to_vector<int32_t>(), ref_vector<int32_t>(e["randint_m5_17_8"]));
    EXPECT_EQ(out[4].to_vector<int32_t>(), ref_vector<int32_t>(e["randint_0_big_5"]));
  }
}

// normal goes through erf_inv, whose f32 polynomial (with XLA's multiply-adds) ferry shares with XLA.
TEST(Random, NormalEqualsJaxBitForBit) {
  for (const auto& e : jax_nn_reference()["random"]) {
    SCOPED_TRACE("seed " + std::to_string(e["seed"].get<int64_t>()));
    auto out = run_once([&](fy::Tensor k) { return fy::random::normal(k, {9}); }, fy::random::key_data(e["seed"].get<int64_t>()));
    std::vector<float> got = out[0].to_vector<float>(), want = ref_floats(e["normal_9"]);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]) << i;
  }
}

TEST(Random, TheSameKeyGivesTheSameNumbersAndSplitKeysDiffer) {
  auto out = run_once([](fy::Tensor k) {
    auto [a, b] = fy::random::split2(k);
    return std::vector<fy::Tensor>{fy::random::uniform(k, {64}), fy::random::uniform(k, {64}), fy::random::uniform(a, {64}),
                                   fy::random::uniform(b, {64})};
  }, fy::random::key_data(7));
  EXPECT_EQ(out[0].to_vector<float>(), out[1].to_vector<float>());
  EXPECT_NE(out[0].to_vector<float>(), out[2].to_vector<float>());
  EXPECT_NE(out[2].to_vector<float>(), out[3].to_vector<float>());
  for (float v : out[0].to_vector<float>()) {
    EXPECT_GE(v, 0.0f);
    EXPECT_LT(v, 1.0f);
  }
}

TEST(Random, BadKeysAndArgumentsAreInvalidArgument) {
  auto bad_key = error_of([] { run_once([](fy::Tensor k) { return fy::random::uniform(k, {3}); }, fy::ones({3})); });
  EXPECT_EQ(bad_key.code(), fy::ErrorCode::invalid_argument);
  EXPECT_THAT(bad_key.message(), HasSubstr("i32[2]"));
  auto bad_p = error_of([] { run_once([](fy::Tensor k) { return fy::random::bernoulli(k, 1.5, {3}); }, fy::random::key_data(0)); });
  EXPECT_EQ(bad_p.code(), fy::ErrorCode::invalid_argument);
  auto bad_shape = error_of([] { run_once([](fy::Tensor k) { return fy::random::bits(k, {-1}); }, fy::random::key_data(0)); });
  EXPECT_EQ(bad_shape.code(), fy::ErrorCode::invalid_argument);
  auto bad_dtype = error_of([] {
    run_once([](fy::Tensor k) { return fy::random::uniform(k, {3}, fy::DType::i32); }, fy::random::key_data(0));
  });
  EXPECT_EQ(bad_dtype.code(), fy::ErrorCode::invalid_argument);
  auto bad_index = error_of([] {
    run_once([](fy::Tensor k) { return fy::random::key_at(fy::random::split(k, 2), 2); }, fy::random::key_data(0));
  });
  EXPECT_EQ(bad_index.code(), fy::ErrorCode::invalid_argument);
}

}  // namespace

namespace {

// The known-answer vectors of Threefry-2x32 with 20 rounds (Random123's kat_vectors).
TEST(Random, ThreefryKnownAnswers) {
  auto out = fy::testing::run_once([](fy::Tensor k0, fy::Tensor k1, fy::Tensor x0, fy::Tensor x1) {
    auto [y0, y1] = fy::random::threefry2x32(k0, k1, x0, x1);
    return std::vector<fy::Tensor>{y0, y1};
  }, fy::Array::from(std::vector<int32_t>{0, -1, static_cast<int32_t>(0x13198a2eu)}, {3}),
     fy::Array::from(std::vector<int32_t>{0, -1, static_cast<int32_t>(0x03707344u)}, {3}),
     fy::Array::from(std::vector<int32_t>{0, -1, static_cast<int32_t>(0x243f6a88u)}, {3}),
     fy::Array::from(std::vector<int32_t>{0, -1, static_cast<int32_t>(0x85a308d3u)}, {3}));
  auto u = [](uint32_t v) { return static_cast<int32_t>(v); };
  EXPECT_EQ(out[0].to_vector<int32_t>(), (std::vector<int32_t>{u(0x6b200159u), u(0x1cb996fcu), u(0xc4923a9cu)}));
  EXPECT_EQ(out[1].to_vector<int32_t>(), (std::vector<int32_t>{u(0x99ba4efeu), u(0xbb002be7u), u(0x483df7a0u)}));
}

}  // namespace

namespace {

// Keys per counter, and one word shared with the other per counter, give each counter's block.
TEST(Random, ThreefryKeysOfEveryStride) {
  auto out = fy::testing::run_once([](fy::Tensor k, fy::Tensor x) {
    fy::Tensor zero = fy::constant(0.0, {}, fy::DType::i32), zeros = fy::constant(0.0, {3}, fy::DType::i32);
    auto [a0, a1] = fy::random::threefry2x32(zero, zero, x, x);
    auto [b0, b1] = fy::random::threefry2x32(zeros, zero, x, x);
    auto [c0, c1] = fy::random::threefry2x32(zero, k, x, x);
    auto [d0, d1] = fy::random::threefry2x32(k, k, x, x);
    return std::vector<fy::Tensor>{a0, a1, b0, b1, c0, d0, fy::random::threefry2x32(fy::constant(5.0, {}, fy::DType::i32), fy::constant(5.0, {}, fy::DType::i32), x, x).first};
  }, fy::Array::from(std::vector<int32_t>{5, 5, 5}, {3}), fy::Array::from(std::vector<int32_t>{0, 1, 2}, {3}));
  EXPECT_EQ(out[0].to_vector<int32_t>(), out[2].to_vector<int32_t>());
  EXPECT_EQ(out[1].to_vector<int32_t>(), out[3].to_vector<int32_t>());
  EXPECT_EQ(out[5].to_vector<int32_t>(), out[6].to_vector<int32_t>());  // per-counter keys of 5 = one key of 5
  EXPECT_NE(out[4].to_vector<int32_t>(), out[0].to_vector<int32_t>());
}

}  // namespace
