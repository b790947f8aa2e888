// iota, constant, broadcast_in_dim, reshape and transpose against naive index arithmetic.
#include <algorithm>
#include <numeric>

#include "runtime/kernel_test_util.h"

namespace ferry::kernel_test {
namespace {

using P = Primitive;

TEST(IotaKernel, EveryDtypeAndDimension) {
  const Shape shape{3, 4, 5};
  for (DType d : all_dtypes())
    for (int64_t dim = 0; dim < 3; ++dim) {
      Buffer y = run1(P::iota, ir::IotaParams{d, shape, dim}, {}, d, shape);
      std::vector<double> want;
      for (int64_t i = 0; i < y.size(); ++i) {
        const double v = static_cast<double>(unravel(i, shape)[static_cast<size_t>(dim)]);
        want.push_back(d == DType::boolean ? v != 0 : v);
      }
      expect_close(y, want, 0, fmt::format("iota {} dim {}", name(d), dim));
    }
}

TEST(IotaKernel, ZeroSize) {
  Buffer y = run1(P::iota, ir::IotaParams{DType::i32, {0, 4}, 1}, {}, DType::i32, {0, 4});
  EXPECT_EQ(y.size(), 0);
}

TEST(ConstantKernel, SplatsIntoEveryDtype) {
  for (DType d : all_dtypes()) {
    Buffer y = run1(P::constant, ir::ConstantParams{2.5, d, {2, 3}}, {}, d, {2, 3});
    const double v = d == DType::i32 ? 2 : d == DType::boolean ? 1 : 2.5;
    expect_close(y, std::vector<double>(6, v), 0, name(d));
  }
  Buffer s = run1(P::constant, ir::ConstantParams{-7, DType::f64, {}}, {}, DType::f64, {});
  expect_close(s, {-7}, 0, "rank 0");
  Buffer big = run1(P::constant, ir::ConstantParams{1e12, DType::i32, {1}}, {}, DType::i32, {1});
  expect_close(big, {2147483647.0}, 0, "i32 saturates");
  EXPECT_EQ(run1(P::constant, ir::ConstantParams{1, DType::f32, {0}}, {}, DType::f32, {0}).size(), 0);
}

std::vector<double> ref_broadcast(const Buffer& x, const Shape& out, const ir::Dims& bd) {
  std::vector<double> want;
  for (int64_t i = 0; i < num_elements(out); ++i) {
    const auto oi = unravel(i, out);
    std::vector<int64_t> xi(x.shape().size());
    for (size_t k = 0; k < xi.size(); ++k) xi[k] = x.shape()[k] == 1 ? 0 : oi[static_cast<size_t>(bd[k])];
    want.push_back(x.get(ravel(xi, x.shape())));
  }
  return want;
}

TEST(BroadcastInDimKernel, Cases) {
  struct Case {
    Shape in, out;
    ir::Dims bd;
  };
  const std::vector<Case> cases{
      {{}, {2, 3, 4}, {}},              // rank 0 to anything
      {{}, {}, {}},                     // rank 0 to rank 0
      {{4}, {3, 4}, {1}},               // leading dimension added
      {{3}, {3, 4}, {0}},               // trailing dimension added
      {{3}, {2, 3, 5}, {1}},            // into a middle dimension
      {{1, 4}, {3, 4}, {0, 1}},         // size-1 stretched
      {{3, 1, 5}, {3, 6, 5}, {0, 1, 2}},  // size-1 stretched in the middle
      {{1, 1}, {2, 7}, {0, 1}},         // every dimension stretched
      {{4, 3}, {3, 2, 4}, {2, 0}},      // dimensions reordered (a transpose)
      {{2, 3}, {2, 3}, {0, 1}},         // identity
      {{1, 3}, {1, 5, 3}, {0, 2}},      // size-1 kept
      {{0, 3}, {2, 0, 3}, {1, 2}},      // zero-size operand and result
      {{3}, {0, 3}, {1}},               // zero-size result
      {{33, 1}, {33, 70}, {0, 1}},      // a fill per row
  };
  for (DType d : all_dtypes())
    for (const Case& c : cases) {
      Buffer x = random_buffer(d, c.in);
      Buffer y = run1(P::broadcast_in_dim, ir::BroadcastInDimParams{c.out, c.bd}, {&x}, d, c.out);
      expect_close(y, ref_broadcast(x, c.out, c.bd), 0,
                   fmt::format("{} {} -> {} bd {}", name(d), shape_string(c.in), shape_string(c.out),
                               fmt::join(c.bd, ",")));
    }
}

TEST(ReshapeKernel, CopiesBytes) {
  for (DType d : all_dtypes()) {
    Buffer x = random_buffer(d, {2, 3, 4});
    EXPECT_TRUE(run1(P::reshape, ir::ReshapeParams{{4, 6}}, {&x}, d, {4, 6}).same_bytes(x)) << name(d);
  }
  Buffer s = random_buffer(DType::f32, {1, 1});
  EXPECT_TRUE(run1(P::reshape, ir::ReshapeParams{{}}, {&s}, DType::f32, {}).same_bytes(s));
  Buffer e(DType::f32, {0, 5});
  EXPECT_EQ(run1(P::reshape, ir::ReshapeParams{{5, 0}}, {&e}, DType::f32, {5, 0}).size(), 0);
}

std::vector<double> ref_transpose(const Buffer& x, const ir::Dims& perm, Shape& out) {
  out.clear();
  for (int64_t p : perm) out.push_back(x.shape()[static_cast<size_t>(p)]);
  std::vector<double> want;
  for (int64_t i = 0; i < num_elements(out); ++i) {
    const auto oi = unravel(i, out);
    std::vector<int64_t> xi(perm.size());
    for (size_t k = 0; k < perm.size(); ++k) xi[static_cast<size_t>(perm[k])] = oi[k];
    want.push_back(x.get(ravel(xi, x.shape())));
  }
  return want;
}

void check_all_permutations(DType d, const Shape& shape) {
  ir::Dims perm(shape.size());
  std::iota(perm.begin(), perm.end(), 0);
  Buffer x = random_buffer(d, shape);
  do {
    Shape out;
    const auto want = ref_transpose(x, perm, out);
    Buffer y = run1(P::transpose, ir::TransposeParams{perm}, {&x}, d, out);
    expect_close(y, want, 0, fmt::format("{} {} perm {}", name(d), shape_string(shape), fmt::join(perm, ",")));
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST(TransposeKernel, Every3DPermutationEveryDtype) {
  for (DType d : all_dtypes()) check_all_permutations(d, {2, 3, 5});
}

TEST(TransposeKernel, Every4DPermutation) {
  check_all_permutations(DType::f32, {2, 3, 4, 5});
  check_all_permutations(DType::f16, {3, 1, 4, 2});
}

TEST(TransposeKernel, LargerThanOneTile) {
  // 70 x 45 crosses the 32-element tiles with ragged edges in both directions.
  for (DType d : {DType::f32, DType::f64, DType::bf16, DType::boolean}) {
    check_all_permutations(d, {70, 45});
    check_all_permutations(d, {3, 40, 37});
  }
}

TEST(TransposeKernel, RankZeroOneAndZeroSize) {
  check_all_permutations(DType::f32, {});
  check_all_permutations(DType::i32, {7});
  check_all_permutations(DType::f32, {3, 0, 2});
  check_all_permutations(DType::f32, {1, 6, 1});
}

}  // namespace
}  // namespace ferry::kernel_test
