// The model primitives and nn functions against JAX's values on stored inputs
// (tests/trace/data/jax_nn_reference.json), and their bad shapes and dtypes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "ferry/ferry.h"
#include "support/error_of.h"
#include "support/jax_nn_reference.h"

namespace fy = ferry;
using fy::testing::error_of;
using fy::testing::jax_nn_reference;
using fy::testing::ref_floats;
using fy::testing::ref_vector;
using fy::testing::run_once;
using ::testing::HasSubstr;

namespace {

const nlohmann::json& prims() { return jax_nn_reference()["prims"]; }
const nlohmann::json& nn() { return jax_nn_reference()["nn"]; }

fy::Array floats(const nlohmann::json& values, fy::Shape shape) { return fy::Array::from(ref_floats(values), shape); }
fy::Array ints(const nlohmann::json& values, fy::Shape shape) { return fy::Array::from(ref_vector<int32_t>(values), shape); }

// Within `rel` of JAX's f32 values (NaN where JAX has NaN).
void expect_close(const fy::Array& got, const nlohmann::json& want, double rel = 2e-6, const char* what = "") {
  std::vector<float> g = got.to_vector<float>(), w = ref_floats(want);
  ASSERT_EQ(g.size(), w.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << what << " [" << i << "]";
      continue;
    }
    EXPECT_NEAR(g[i], w[i], rel * std::max(1.0, std::fabs(double(w[i])))) << what << " [" << i << "]";
  }
}

TEST(ModelOps, ElementwiseEqualJax) {
  fy::Shape s = prims()["shape"].get<fy::Shape>();
  fy::Array x = floats(prims()["x"], s), y = floats(prims()["y"], s), p = floats(prims()["p"], s);
  auto out = run_once([](fy::Tensor x, fy::Tensor y, fy::Tensor p) {
    return std::vector<fy::Tensor>{fy::erf(x), fy::erf_inv(p), fy::log1p(fy::abs(x)), fy::expm1(x), fy::floor(x),
                                   fy::ceil(x), fy::round(x), fy::rem(x, y), fy::clamp(-1.0, x, 2.0)};
  }, x, y, p);
  const char* names[] = {"erf", "erf_inv", "log1p", "expm1", "floor", "ceil", "round", "rem", "clamp"};
  for (size_t i = 0; i < 9; ++i) expect_close(out[i], prims()[names[i]], 2e-6, names[i]);
}

TEST(ModelOps, AxisReductionsEqualJax) {
  fy::Shape s = prims()["shape"].get<fy::Shape>();
  fy::Array x = floats(prims()["x"], s);
  auto out = run_once([](fy::Tensor x) {
    return std::vector<fy::Tensor>{fy::min(x, {1}), fy::argmax(x, 1), fy::argmin(x, 0), fy::cumsum(x, 1),
                                   fy::cumsum(x, 0, /*reverse=*/true), fy::cummax(x, 1), fy::cummin(x, 0)};
  }, x);
  expect_close(out[0], prims()["reduce_min_1"], 0, "reduce_min");
  EXPECT_EQ(out[1].to_vector<int32_t>(), ref_vector<int32_t>(prims()["argmax_1"]));
  EXPECT_EQ(out[2].to_vector<int32_t>(), ref_vector<int32_t>(prims()["argmin_0"]));
  expect_close(out[3], prims()["cumsum_1"], 1e-6, "cumsum");
  expect_close(out[4], prims()["cumsum_0_rev"], 1e-6, "cumsum reverse");
  expect_close(out[5], prims()["cummax_1"], 0, "cummax");
  expect_close(out[6], prims()["cummin_0"], 0, "cummin");
  // Without an axis: the index into the flattened array (x's maximum 7.25 is its last element).
  auto flat = run_once([](fy::Tensor x) { return std::vector<fy::Tensor>{fy::argmax(x), fy::argmin(x)}; }, x);
  EXPECT_EQ(flat[0].to_vector<int32_t>(), (std::vector<int32_t>{11}));
  EXPECT_EQ(flat[1].to_vector<int32_t>(), (std::vector<int32_t>{7}));
}

TEST(ModelOps, IntegerBitsEqualJax) {
  fy::Array a = ints(prims()["ia"], {5}), b = ints(prims()["ib"], {5});
  auto out = run_once([](fy::Tensor a, fy::Tensor b) {
    fy::Tensor three = fy::constant(3.0, {5}, fy::DType::i32);
    return std::vector<fy::Tensor>{fy::logical_and(a, b), fy::logical_or(a, b), fy::logical_xor(a, b),
                                   fy::logical_not(a), fy::rem(a, b), fy::shift_left(a, three),
                                   fy::shift_right_logical(a, three)};
  }, a, b);
  const char* names[] = {"iand", "ior", "ixor", "inot", "irem", "shl3", "shr3"};
  for (size_t i = 0; i < 7; ++i) EXPECT_EQ(out[i].to_vector<int32_t>(), ref_vector<int32_t>(prims()[names[i]])) << names[i];
}

TEST(ModelOps, LogicalOnBoolAndSelectN) {
  auto out = run_once([](fy::Tensor x) {
    fy::Tensor a = x > 0.0, b = x > 1.5;
    fy::Tensor which = fy::convert(fy::floor(x), fy::DType::i32);
    return std::vector<fy::Tensor>{fy::convert(fy::logical_and(a, b), fy::DType::i32),
                                   fy::convert(fy::logical_or(a, b), fy::DType::i32),
                                   fy::convert(fy::logical_xor(a, b), fy::DType::i32),
                                   fy::convert(fy::logical_not(a), fy::DType::i32),
                                   fy::select_n(which, {x * 10.0, x * 100.0, x * 1000.0}),
                                   fy::select_n(a, {x, -x})};
  }, fy::Array::from(std::vector<float>{-1.0f, 0.5f, 2.0f, 1.0f}, {4}));
  EXPECT_EQ(out[0].to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 1, 0}));
  EXPECT_EQ(out[1].to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 1, 1}));
  EXPECT_EQ(out[2].to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 0, 1}));
  EXPECT_EQ(out[3].to_vector<int32_t>(), (std::vector<int32_t>{1, 0, 0, 0}));
  // which = floor(x) = -1, 0, 2, 1: clamped into [0, 3).
  EXPECT_EQ(out[4].to_vector<float>(), (std::vector<float>{-10.0f, 5.0f, 2000.0f, 100.0f}));
  EXPECT_EQ(out[5].to_vector<float>(), (std::vector<float>{-1.0f, -0.5f, -2.0f, -1.0f}));
}

TEST(ModelOps, GatherScatterTakeAndOneHotEqualJax) {
  fy::Array table = floats(prims()["table"], {5, 4});
  fy::Array ids = ints(prims()["ids"], {3, 2});
  auto out = run_once([](fy::Tensor t, fy::Tensor ids) {
    fy::Tensor sidx = fy::constant(1.0, {3, 1}, fy::DType::i32);
    return std::vector<fy::Tensor>{
        fy::take(t, ids, 0), fy::take(t, fy::constant(3.0, {2}, fy::DType::i32) - fy::iota(fy::DType::i32, {2}) * 2.0, 1)};
  }, table, ids);
  expect_close(out[0], prims()["take_0"], 0, "take axis 0");
  EXPECT_EQ(out[0].shape(), (fy::Shape{3, 2, 4}));
  expect_close(out[1], prims()["take_1"], 0, "take axis 1");
  EXPECT_EQ(out[1].shape(), (fy::Shape{5, 2}));

  auto oob = run_once([](fy::Tensor t, fy::Tensor i) { return fy::take(t, i, 0); }, table,
                      fy::Array::from(std::vector<int32_t>{1, 7, -9, -1}, {4}));
  expect_close(oob[0], prims()["take_oob"], 0, "take: out of bounds fills NaN, -1 is the last row");
  auto neg = run_once([](fy::Tensor t, fy::Tensor i) { return fy::take_along_axis(t, i, 1); }, table,
                      fy::Array::from(std::vector<int32_t>{-1, 0, 3, -4, 9}, {5, 1}));
  expect_close(neg[0], prims()["take_along_neg"], 0, "take_along_axis with negative indices");
  auto hot = run_once([](fy::Tensor i) { return fy::one_hot(i, 4); }, fy::Array::from(std::vector<int32_t>{0, 3, 5, -1}, {4}));
  expect_close(hot[0], prims()["one_hot"], 0, "one_hot");

  auto sc = run_once([](fy::Tensor t, fy::Tensor i, fy::Tensor u) {
    return fy::scatter_add(t, i, u, {{1}, {0}, {0}});
  }, table, ints(prims()["scatter_idx"], {3, 1}), floats(prims()["scatter_upd"], {3, 4}));
  expect_close(sc[0], prims()["scatter_add"], 0, "scatter_add adds repeated indices");
  auto ga = run_once([](fy::Tensor t, fy::Tensor i) {
    return fy::gather(t, i, {{1}, {0}, {0}}, {1, 2}, fy::GatherScatterMode::clip);
  }, table, fy::Array::from(std::vector<int32_t>{1, 3, 4}, {3, 1}));
  expect_close(ga[0], prims()["gather_rows_2"], 0, "gather");
}

TEST(ModelOps, NnFunctionsEqualJax) {
  fy::Shape s = nn()["shape"].get<fy::Shape>();
  fy::Array logits = floats(nn()["logits"], s);
  fy::Array labels = ints(nn()["labels"], {s[0]});
  fy::Array scale = floats(nn()["scale"], {s[1]}), bias = floats(nn()["bias"], {s[1]});
  auto out = run_once([](fy::Tensor x, fy::Tensor labels, fy::Tensor scale, fy::Tensor bias) {
    return std::vector<fy::Tensor>{fy::nn::relu(x), fy::nn::gelu(x), fy::nn::gelu(x, false), fy::nn::silu(x),
                                   fy::nn::softmax(x), fy::nn::softmax(x, 0), fy::nn::log_softmax(x),
                                   fy::nn::logsumexp(x, {1}), fy::nn::logsumexp(x),
                                   fy::nn::layer_norm(x, scale, bias), fy::nn::rms_norm(x, scale),
                                   fy::nn::cross_entropy(x, labels),
                                   fy::nn::dropout(fy::random::key(3), 0.5, x)};
  }, logits, labels, scale, bias);
  const char* names[] = {"relu", "gelu_tanh", "gelu_exact", "silu", "softmax", "softmax_0", "log_softmax", "logsumexp_1",
                         "logsumexp_all", "layer_norm", "rms_norm", "cross_entropy", "dropout_k3_r05"};
  for (size_t i = 0; i < 13; ++i) expect_close(out[i], nn()[names[i]], 3e-6, names[i]);
}

TEST(ModelOps, StableForLargeAndInfiniteLogits) {
  auto out = run_once([](fy::Tensor x) {
    return std::vector<fy::Tensor>{fy::nn::softmax(x), fy::nn::logsumexp(x, {0}), fy::nn::log_softmax(x)};
  }, fy::Array::from(std::vector<float>{1000.0f, 1000.0f, -INFINITY}, {3}));
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{0.5f, 0.5f, 0.0f}));
  EXPECT_NEAR(out[1].to_vector<float>()[0], 1000.0f + std::log(2.0f), 1e-3);
  EXPECT_EQ(out[2].to_vector<float>()[2], -INFINITY);
  auto all_inf = run_once([](fy::Tensor x) { return fy::nn::logsumexp(x); },
                          fy::Array::from(std::vector<float>{-INFINITY, -INFINITY}, {2}));
  EXPECT_EQ(all_inf[0].to_vector<float>()[0], -INFINITY);
}

TEST(ModelOps, DropoutKeepsTheRateAndScales) {
  auto out = run_once([](fy::Tensor x) { return fy::nn::dropout(fy::random::key(11), 0.25, x); }, fy::ones({4096}));
  int kept = 0;
  for (float v : out[0].to_vector<float>()) {
    EXPECT_TRUE(v == 0.0f || v == 1.0f / 0.75f) << v;
    kept += v != 0.0f;
  }
  EXPECT_NEAR(kept / 4096.0, 0.75, 0.03);
}

template <class F> void expect_invalid(F f, const char* needle) {
  fy::Error e = error_of(f);
  EXPECT_EQ(e.code(), fy::ErrorCode::invalid_argument) << e.message();
  EXPECT_THAT(e.message(), HasSubstr(needle));
}

TEST(ModelOps, BadShapesAndDtypesAreInvalidArgument) {
  auto lower = [](auto f, auto... specs) { return fy::jit(f).lower(specs...); };
  fy::ShapeDtype f23{{2, 3}}, i2{{2}, fy::DType::i32}, i23{{2, 3}, fy::DType::i32}, f3{{3}};
  expect_invalid([&] { lower([](fy::Tensor x) { return fy::erf(x); }, i2); }, "erf");
  expect_invalid([&] { lower([](fy::Tensor x) { return fy::floor(x); }, i2); }, "floor");
  expect_invalid([&] { lower([](fy::Tensor x) { return fy::logical_not(x); }, f23); }, "not");
  expect_invalid([&] { lower([](fy::Tensor x, fy::Tensor y) { return fy::logical_and(x, y); }, f23, f23); }, "and");
  expect_invalid([&] { lower([](fy::Tensor x, fy::Tensor y) { return fy::shift_left(x, y); }, f23, f23); }, "shift_left");
  expect_invalid([&] { lower([](fy::Tensor x, fy::Tensor y) { return fy::rem(x, y); }, f23, fy::ShapeDtype{{4}}); }, "rem");
  expect_invalid([&] { lower([](fy::Tensor x, fy::Tensor y) { return fy::clamp(y, x, y); }, f23, i2); }, "clamp");
  expect_invalid([&] { lower([](fy::Tensor x) { return fy::argmax(x, 2); }, f23); }, "argmax");
  expect_invalid([&] { lower([](fy::Tensor x) { return fy::cumsum(x, -3); }, f23); }, "cumsum");
  expect_invalid([&] { lower([](fy::Tensor x) { return fy::bitcast_convert_type(x, fy::DType::f64); }, f23); },
                 "bitcast_convert_type");
  expect_invalid([&] { lower([](fy::Tensor x, fy::Tensor i) { return fy::take(x, i, 0); }, f23, f3); }, "i32");
  expect_invalid([&] { lower([](fy::Tensor x, fy::Tensor i) { return fy::take(x, i, 5); }, f23, i2); }, "take");
  expect_invalid([&] { lower([](fy::Tensor x, fy::Tensor i) { return fy::take_along_axis(x, i, 1); }, f23, i2); },
                 "take_along_axis");
  expect_invalid([&] {
    lower([](fy::Tensor x, fy::Tensor i) { return fy::gather(x, i, {{1}, {0}, {0}}, {2, 3}); }, f23, fy::ShapeDtype{{4, 1}, fy::DType::i32});
  }, "collapsed");
  expect_invalid([&] {
    lower([](fy::Tensor x, fy::Tensor i) { return fy::gather(x, i, {{1}, {0}, {0, 1}}, {1, 3}); }, f23, fy::ShapeDtype{{4, 1}, fy::DType::i32});
  }, "gather");
  expect_invalid([&] {
    lower([](fy::Tensor x, fy::Tensor i, fy::Tensor u) { return fy::scatter_add(x, i, u, {{1}, {0}, {0}}); }, f23,
          fy::ShapeDtype{{4, 1}, fy::DType::i32}, fy::ShapeDtype{{3, 3}});
  }, "scatter_add");
  expect_invalid([&] { lower([](fy::Tensor x) { return fy::nn::softmax(x); }, i23); }, "softmax");
  expect_invalid([&] { lower([](fy::Tensor x, fy::Tensor l) { return fy::nn::cross_entropy(x, l); }, f23, f3); },
                 "cross_entropy");
  expect_invalid([&] { lower([](fy::Tensor x, fy::Tensor s) { return fy::nn::layer_norm(x, s); }, f23, f23); },
                 "layer_norm");
  expect_invalid([&] { lower([](fy::Tensor x) { return fy::nn::dropout(fy::random::key(0), 1.5, x); }, f23); },
                 "dropout");
  expect_invalid([&] { lower([](fy::Tensor x) { return fy::nn::dropout(x, 0.5, x); }, f23); }, "i32[2]");
}

}  // namespace
