// CPU kernels for unary, binary, comparison and select primitives, on every dtype each accepts.
#include <climits>

#include "runtime/kernel_test_util.h"

namespace ferry::kernel_test {
namespace {

using P = Primitive;

double ref_unary(P p, double x) {
  switch (p) {
    case P::neg: return -x;
    case P::exp: return std::exp(x);
    case P::log: return std::log(x);
    case P::sin: return std::sin(x);
    case P::cos: return std::cos(x);
    case P::tanh: return std::tanh(x);
    case P::logistic: return 1 / (1 + std::exp(-x));
    case P::sqrt: return std::sqrt(x);
    case P::rsqrt: return 1 / std::sqrt(x);
    case P::abs: return std::fabs(x);
    case P::sign: return x > 0 ? 1 : x < 0 ? -1 : x;
    default: return NAN;
  }
}

const std::vector<P> kUnary{P::neg, P::exp,  P::log, P::sin,   P::cos, P::tanh,
                            P::logistic, P::sqrt, P::rsqrt, P::abs, P::sign};

TEST(UnaryKernel, EveryOpOnEveryFloatDtype) {
  for (DType d : float_dtypes())
    for (P p : kUnary) {
      const bool positive = p == P::log || p == P::sqrt || p == P::rsqrt;
      Buffer x = random_buffer(d, {3, 37}, positive ? 0.1 : -4, 4);  // 111: a chunk tail for halfs
      Buffer y = run1(p, ir::NoParams{}, {&x}, d, {3, 37});
      std::vector<double> want;
      for (double v : x.values()) want.push_back(ref_unary(p, v));
      expect_close(y, want, fmt::format("{} {}", primitive_name(p), name(d)));
    }
}

TEST(UnaryKernel, HalfInputsLongerThanOneChunk) {
  for (DType d : {DType::f16, DType::bf16}) {
    Buffer x = random_buffer(d, {1000});
    Buffer y = run1(P::tanh, ir::NoParams{}, {&x}, d, {1000});
    std::vector<double> want;
    for (double v : x.values()) want.push_back(std::tanh(v));
    expect_close(y, want, name(d));
  }
}

TEST(UnaryKernel, SpecialValues) {
  const double inf = INFINITY;
  Buffer x = filled(DType::f32, {6}, {-0.0, 0.0, NAN, inf, -inf, -1});
  expect_close(run1(P::sign, ir::NoParams{}, {&x}, DType::f32, {6}), {-0.0, 0.0, NAN, 1, -1, -1}, "sign");
  expect_close(run1(P::logistic, ir::NoParams{}, {&x}, DType::f32, {6}), {0.5, 0.5, NAN, 1, 0, 1 / (1 + std::exp(1.0))},
               "logistic");
  expect_close(run1(P::log, ir::NoParams{}, {&x}, DType::f32, {6}), {-inf, -inf, NAN, inf, NAN, NAN}, "log");
  expect_close(run1(P::rsqrt, ir::NoParams{}, {&x}, DType::f32, {6}), {-inf, inf, NAN, 0, NAN, NAN}, "rsqrt");
  Buffer s = run1(P::sign, ir::NoParams{}, {&x}, DType::f32, {6});
  EXPECT_TRUE(std::signbit(s.get(0)));  // sign(-0) is -0
}

TEST(UnaryKernel, Int32NegAbsSignWrapAtIntMin) {
  Buffer x = filled(DType::i32, {5}, {0, 7, -7, INT_MIN, INT_MAX});
  expect_close(run1(P::neg, ir::NoParams{}, {&x}, DType::i32, {5}), {0, -7, 7, INT_MIN, -INT_MAX}, "neg");
  expect_close(run1(P::abs, ir::NoParams{}, {&x}, DType::i32, {5}), {0, 7, 7, INT_MIN, INT_MAX}, "abs");
  expect_close(run1(P::sign, ir::NoParams{}, {&x}, DType::i32, {5}), {0, 1, -1, -1, 1}, "sign");
}

TEST(UnaryKernel, RankZeroAndEmpty) {
  Buffer x = filled(DType::f64, {}, {2.0});
  expect_close(run1(P::sqrt, ir::NoParams{}, {&x}, DType::f64, {}), {std::sqrt(2.0)}, "rank 0");
  Buffer e(DType::f16, {0, 3});
  EXPECT_EQ(run1(P::exp, ir::NoParams{}, {&e}, DType::f16, {0, 3}).size(), 0);
}

TEST(UnaryKernel, UnsupportedDtypeIsAnErrorNotACrash) {
  Buffer x = random_buffer(DType::i32, {4});
  try {
    run1(P::exp, ir::NoParams{}, {&x}, DType::i32, {4});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::internal);
    EXPECT_NE(e.message().find("exp"), std::string::npos);
  }
}

double ref_binary(P p, double a, double b) {
  switch (p) {
    case P::add: return a + b;
    case P::sub: return a - b;
    case P::mul: return a * b;
    case P::div: return a / b;
    case P::max: return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
    case P::min: return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
    case P::pow: return std::pow(a, b);
    default: return NAN;
  }
}

const std::vector<P> kBinary{P::add, P::sub, P::mul, P::div, P::max, P::min, P::pow};

TEST(BinaryKernel, EveryOpOnEveryFloatDtype) {
  for (DType d : float_dtypes())
    for (P p : kBinary) {
      Buffer a = random_buffer(d, {2, 3, 50}, p == P::pow ? 0.1 : -4, 4);
      Buffer b = random_buffer(d, {2, 3, 50}, p == P::pow ? -2 : -4, p == P::pow ? 2 : 4);
      Buffer y = run1(p, ir::NoParams{}, {&a, &b}, d, {2, 3, 50});
      std::vector<double> want;
      for (int64_t i = 0; i < a.size(); ++i) want.push_back(ref_binary(p, a.get(i), b.get(i)));
      // A quotient or power of rounded operands can amplify one rounding a little.
      expect_close(y, want, tolerance(d) * 4, fmt::format("{} {}", primitive_name(p), name(d)));
    }
}

TEST(BinaryKernel, MaxMinPropagateNaN) {
  for (DType d : float_dtypes()) {
    Buffer a = filled(d, {4}, {NAN, 1, NAN, -2});
    Buffer b = filled(d, {4}, {1, NAN, NAN, 3});
    expect_close(run1(P::max, ir::NoParams{}, {&a, &b}, d, {4}), {NAN, NAN, NAN, 3}, "max " + name(d));
    expect_close(run1(P::min, ir::NoParams{}, {&a, &b}, d, {4}), {NAN, NAN, NAN, -2}, "min " + name(d));
  }
}

int32_t wrap64(int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v))); }

TEST(BinaryKernel, Int32Arithmetic) {
  Buffer a = random_buffer(DType::i32, {257});
  Buffer b = random_buffer(DType::i32, {257});
  for (int64_t i = 0; i < b.size(); ++i)
    if (b.get(i) == 0) b.set(i, 3);
  for (P p : {P::add, P::sub, P::mul, P::div, P::max, P::min}) {
    Buffer y = run1(p, ir::NoParams{}, {&a, &b}, DType::i32, {257});
    std::vector<double> want;
    for (int64_t i = 0; i < a.size(); ++i) {
      const auto x = static_cast<int64_t>(a.get(i)), z = static_cast<int64_t>(b.get(i));
      const int64_t r = p == P::add ? x + z : p == P::sub ? x - z : p == P::mul ? x * z
                      : p == P::div ? x / z : p == P::max ? std::max(x, z) : std::min(x, z);
      want.push_back(r);
    }
    expect_close(y, want, std::string(primitive_name(p)));
  }
}

TEST(BinaryKernel, Int32DivisionTruncatesAndNeverTraps) {
  // x / 0 is -1 and INT_MIN / -1 is INT_MIN (XLA's results); other quotients truncate toward zero.
  Buffer a = filled(DType::i32, {7}, {7, -7, 7, -7, 5, INT_MIN, 0});
  Buffer b = filled(DType::i32, {7}, {2, 2, -2, -2, 0, -1, 0});
  expect_close(run1(P::div, ir::NoParams{}, {&a, &b}, DType::i32, {7}), {3, -3, -3, 3, -1, INT_MIN, -1}, "div");
}

TEST(BinaryKernel, Int32OverflowWraps) {
  Buffer a = filled(DType::i32, {3}, {INT_MAX, INT_MIN, 65536});
  Buffer b = filled(DType::i32, {3}, {1, 1, 65536});
  expect_close(run1(P::add, ir::NoParams{}, {&a, &b}, DType::i32, {3}), {INT_MIN, INT_MIN + 1.0, 131072}, "add");
  expect_close(run1(P::sub, ir::NoParams{}, {&a, &b}, DType::i32, {3}), {INT_MAX - 1.0, INT_MAX, 0}, "sub");
  expect_close(run1(P::mul, ir::NoParams{}, {&a, &b}, DType::i32, {3}), {INT_MAX, INT_MIN, 0}, "mul");
}

TEST(BinaryKernel, Int32Pow) {
  Buffer a = filled(DType::i32, {9}, {2, -3, 0, 0, 1, -1, -1, 2, 3});
  Buffer b = filled(DType::i32, {9}, {10, 3, 0, 5, -4, -3, -2, -1, 21});
  expect_close(run1(P::pow, ir::NoParams{}, {&a, &b}, DType::i32, {9}),
               {1024, -27, 1, 0, 1, -1, 1, 0, static_cast<double>(wrap64(10460353203LL))}, "pow");
}

TEST(BinaryKernel, BoolIsOrAnd) {
  Buffer a = filled(DType::boolean, {4}, {0, 0, 1, 1});
  Buffer b = filled(DType::boolean, {4}, {0, 1, 0, 1});
  expect_close(run1(P::add, ir::NoParams{}, {&a, &b}, DType::boolean, {4}), {0, 1, 1, 1}, "add");
  expect_close(run1(P::max, ir::NoParams{}, {&a, &b}, DType::boolean, {4}), {0, 1, 1, 1}, "max");
  expect_close(run1(P::mul, ir::NoParams{}, {&a, &b}, DType::boolean, {4}), {0, 0, 0, 1}, "mul");
  expect_close(run1(P::min, ir::NoParams{}, {&a, &b}, DType::boolean, {4}), {0, 0, 0, 1}, "min");
}

TEST(BinaryKernel, ZeroSizeAndRankZero) {
  for (DType d : {DType::f32, DType::i32, DType::bf16}) {
    Buffer a(d, {4, 0}), b(d, {4, 0});
    EXPECT_EQ(run1(P::add, ir::NoParams{}, {&a, &b}, d, {4, 0}).size(), 0);
    Buffer s = filled(d, {}, {3}), t = filled(d, {}, {2});
    expect_close(run1(P::mul, ir::NoParams{}, {&s, &t}, d, {}), {6}, "rank 0 " + name(d));
  }
}

// `s` (rank 0) written out in full: what the simplify pass saves materializing.
Buffer broadcast_of(const Buffer& s, const Shape& shape) {
  Buffer b(s.dtype(), shape);
  for (int64_t i = 0; i < b.size(); ++i) b.set(i, s.get(0));
  return b;
}

// A rank-0 operand is read at stride 0: the result has the same bits as with the operand broadcast
// in full, on either side, for every dtype and op (lengths past one half-float chunk).
TEST(BinaryKernel, RankZeroOperandGivesTheBitsOfItsBroadcast) {
  const Shape shape{3, 101};
  for (DType d : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32})
    for (P p : kBinary) {
      Buffer full = random_buffer(d, shape, p == P::pow ? 0.1 : -4, 4);
      Buffer s = random_buffer(d, {}, p == P::pow ? -2 : -4, p == P::pow ? 2 : 4);
      Buffer wide = broadcast_of(s, shape);
      std::string what = fmt::format("{} {}", primitive_name(p), name(d));
      EXPECT_TRUE(run1(p, ir::NoParams{}, {&s, &full}, d, shape).same_bytes(run1(p, ir::NoParams{}, {&wide, &full}, d, shape)))
          << what << " (scalar first)";
      EXPECT_TRUE(run1(p, ir::NoParams{}, {&full, &s}, d, shape).same_bytes(run1(p, ir::NoParams{}, {&full, &wide}, d, shape)))
          << what << " (scalar second)";
    }
  Buffer a = filled(DType::boolean, {4}, {0, 1, 0, 1}), one = filled(DType::boolean, {}, {1});
  expect_close(run1(P::mul, ir::NoParams{}, {&a, &one}, DType::boolean, {4}), {0, 1, 0, 1}, "bool and");
}

const std::vector<P> kCompare{P::eq, P::ne, P::lt, P::le, P::gt, P::ge};

bool ref_compare(P p, double a, double b) {
  switch (p) {
    case P::eq: return a == b;
    case P::ne: return a != b;
    case P::lt: return a < b;
    case P::le: return a <= b;
    case P::gt: return a > b;
    case P::ge: return a >= b;
    default: return false;
  }
}

TEST(CompareKernel, EveryOpOnEveryDtype) {
  for (DType d : all_dtypes())
    for (P p : kCompare) {
      Buffer a = random_buffer(d, {5, 41});
      Buffer b = random_buffer(d, {5, 41});
      for (int64_t i = 0; i < a.size(); i += 3) b.set(i, a.get(i));  // ties
      Buffer y = run1(p, ir::NoParams{}, {&a, &b}, DType::boolean, {5, 41});
      std::vector<double> want;
      for (int64_t i = 0; i < a.size(); ++i) want.push_back(ref_compare(p, a.get(i), b.get(i)));
      expect_close(y, want, fmt::format("{} {}", primitive_name(p), name(d)));
    }
}

TEST(CompareKernel, RankZeroOperandGivesTheBitsOfItsBroadcast) {
  for (DType d : all_dtypes())
    for (P p : kCompare) {
      Buffer full = random_buffer(d, {2, 70});
      Buffer s = filled(d, {}, {full.get(3)});  // some elements tie
      Buffer wide = broadcast_of(s, {2, 70});
      std::string what = fmt::format("{} {}", primitive_name(p), name(d));
      EXPECT_TRUE(run1(p, ir::NoParams{}, {&s, &full}, DType::boolean, {2, 70})
                      .same_bytes(run1(p, ir::NoParams{}, {&wide, &full}, DType::boolean, {2, 70})))
          << what;
      EXPECT_TRUE(run1(p, ir::NoParams{}, {&full, &s}, DType::boolean, {2, 70})
                      .same_bytes(run1(p, ir::NoParams{}, {&full, &wide}, DType::boolean, {2, 70})))
          << what;
    }
}

TEST(CompareKernel, NaNIsUnorderedAndUnequal) {
  for (DType d : float_dtypes()) {
    Buffer a = filled(d, {2}, {NAN, NAN});
    Buffer b = filled(d, {2}, {NAN, 1});
    expect_close(run1(P::eq, ir::NoParams{}, {&a, &b}, DType::boolean, {2}), {0, 0}, "eq");
    expect_close(run1(P::ne, ir::NoParams{}, {&a, &b}, DType::boolean, {2}), {1, 1}, "ne");
    expect_close(run1(P::lt, ir::NoParams{}, {&a, &b}, DType::boolean, {2}), {0, 0}, "lt");
    expect_close(run1(P::ge, ir::NoParams{}, {&a, &b}, DType::boolean, {2}), {0, 0}, "ge");
  }
}

TEST(SelectKernel, EveryDtypeExact) {
  for (DType d : all_dtypes()) {
    Buffer pred = random_buffer(DType::boolean, {3, 33});
    Buffer t = random_buffer(d, {3, 33}), f = random_buffer(d, {3, 33});
    Buffer y = run1(P::select, ir::NoParams{}, {&pred, &t, &f}, d, {3, 33});
    std::vector<double> want;
    for (int64_t i = 0; i < y.size(); ++i) want.push_back(pred.get(i) ? t.get(i) : f.get(i));
    expect_close(y, want, 0, "select " + name(d));
  }
}

TEST(SelectKernel, ScalarPredicateChoosesAWholeOperand) {
  Buffer t = random_buffer(DType::f32, {4, 5}), f = random_buffer(DType::f32, {4, 5});
  for (int v : {0, 1}) {
    Buffer pred = filled(DType::boolean, {}, {static_cast<double>(v)});
    Buffer y = run1(P::select, ir::NoParams{}, {&pred, &t, &f}, DType::f32, {4, 5});
    EXPECT_TRUE(y.same_bytes(v ? t : f));
  }
}

// Every combination of rank-0 and full operands gives the bits of the fully broadcast select.
TEST(SelectKernel, RankZeroOperandsGiveTheBitsOfTheirBroadcasts) {
  const Shape shape{3, 17};
  for (DType d : all_dtypes())
    for (int mask = 1; mask < 8; ++mask) {
      Buffer pred = random_buffer(DType::boolean, shape), t = random_buffer(d, shape), f = random_buffer(d, shape);
      Buffer ps = filled(DType::boolean, {}, {static_cast<double>(mask % 3 == 0)}), ts = random_buffer(d, {}), fs = random_buffer(d, {});
      Buffer pw = broadcast_of(ps, shape), tw = broadcast_of(ts, shape), fw = broadcast_of(fs, shape);
      const bool sp = mask & 4, st = mask & 2, sf = mask & 1;
      Buffer got = run1(P::select, ir::NoParams{}, {sp ? &ps : &pred, st ? &ts : &t, sf ? &fs : &f}, d, shape);
      Buffer want = run1(P::select, ir::NoParams{}, {sp ? &pw : &pred, st ? &tw : &t, sf ? &fw : &f}, d, shape);
      EXPECT_TRUE(got.same_bytes(want)) << "select " << name(d) << " scalar mask " << mask;
    }
}

TEST(SelectKernel, ZeroSize) {
  Buffer pred(DType::boolean, {0}), t(DType::f64, {0}), f(DType::f64, {0});
  EXPECT_EQ(run1(P::select, ir::NoParams{}, {&pred, &t, &f}, DType::f64, {0}).size(), 0);
}

}  // namespace
}  // namespace ferry::kernel_test
