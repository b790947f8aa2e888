// dot_general against a naive reference: batch dimensions anywhere, several contracting dimensions
// in any position, transposed layouts (BLAS flags) and layouts that need packing, M/N/K of 0 and 1.
#include "runtime/kernel_test_util.h"

namespace ferry::kernel_test {
namespace {

struct DotCase {
  std::string what;
  Shape lhs, rhs;
  ir::DotDimensionNumbers dims;
};

std::vector<int64_t> free_dims(size_t rank, const ir::Dims& batch, const ir::Dims& contracting) {
  std::vector<int64_t> f;
  for (int64_t d = 0; d < static_cast<int64_t>(rank); ++d)
    if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
        std::find(contracting.begin(), contracting.end(), d) == contracting.end())
      f.push_back(d);
  return f;
}

// want[i] and sum of |terms| (for the tolerance), by index arithmetic over the output and the
// contracting index space.
void ref_dot(const Buffer& a, const Buffer& b, const ir::DotDimensionNumbers& dn, Shape& out,
             std::vector<double>& want, std::vector<double>& mag) {
  const auto lf = free_dims(a.shape().size(), dn.lhs_batch, dn.lhs_contracting);
  const auto rf = free_dims(b.shape().size(), dn.rhs_batch, dn.rhs_contracting);
  out.clear();
  for (int64_t d : dn.lhs_batch) out.push_back(a.shape()[static_cast<size_t>(d)]);
  for (int64_t d : lf) out.push_back(a.shape()[static_cast<size_t>(d)]);
  for (int64_t d : rf) out.push_back(b.shape()[static_cast<size_t>(d)]);
  Shape kshape;
  for (int64_t d : dn.lhs_contracting) kshape.push_back(a.shape()[static_cast<size_t>(d)]);
  const bool is_bool = a.dtype() == DType::boolean;
  want.assign(static_cast<size_t>(num_elements(out)), 0);
  mag.assign(want.size(), 0);
  for (int64_t o = 0; o < num_elements(out); ++o) {
    const auto oi = unravel(o, out);
    std::vector<int64_t> ai(a.shape().size()), bi(b.shape().size());
    size_t k = 0;
    for (size_t i = 0; i < dn.lhs_batch.size(); ++i, ++k) {
      ai[static_cast<size_t>(dn.lhs_batch[i])] = oi[k];
      bi[static_cast<size_t>(dn.rhs_batch[i])] = oi[k];
    }
    for (int64_t d : lf) ai[static_cast<size_t>(d)] = oi[k++];
    for (int64_t d : rf) bi[static_cast<size_t>(d)] = oi[k++];
    for (int64_t c = 0; c < num_elements(kshape); ++c) {
      const auto ci = unravel(c, kshape);
      for (size_t i = 0; i < ci.size(); ++i) {
        ai[static_cast<size_t>(dn.lhs_contracting[i])] = ci[i];
        bi[static_cast<size_t>(dn.rhs_contracting[i])] = ci[i];
      }
      const double t = a.get(ravel(ai, a.shape())) * b.get(ravel(bi, b.shape()));
      want[static_cast<size_t>(o)] += t;
      mag[static_cast<size_t>(o)] += std::fabs(t);
    }
    if (is_bool) want[static_cast<size_t>(o)] = want[static_cast<size_t>(o)] != 0;
  }
}

void check(DType d, const DotCase& c) {
  Buffer a = random_buffer(d, c.lhs), b = random_buffer(d, c.rhs);
  Shape out;
  std::vector<double> want, mag;
  ref_dot(a, b, c.dims, out, want, mag);
  Buffer y = run1(Primitive::dot_general, ir::DotGeneralParams{c.dims}, {&a, &b}, d, out);
  ASSERT_EQ(y.size(), static_cast<int64_t>(want.size()));
  int failures = 0;
  for (int64_t i = 0; i < y.size() && failures < 5; ++i) {
    const double w = want[static_cast<size_t>(i)], g = y.get(i);
    // Rounding scales with the size of the terms, not of their (possibly cancelling) sum.
    if (std::fabs(g - w) > tolerance(d) * 8 * (1 + mag[static_cast<size_t>(i)])) {
      ++failures;
      ADD_FAILURE() << c.what << " " << name(d) << ": element " << i << " is " << g << ", expected " << w;
    }
  }
}

ir::DotDimensionNumbers dn(ir::Dims lc, ir::Dims rc, ir::Dims lb = {}, ir::Dims rb = {}) {
  return {std::move(lc), std::move(rc), std::move(lb), std::move(rb)};
}

const std::vector<DotCase>& cases() {
  static const std::vector<DotCase> c{
      {"matmul", {5, 7}, {7, 3}, dn({1}, {0})},
      {"lhs stored transposed", {7, 5}, {7, 3}, dn({0}, {0})},
      {"rhs stored transposed", {5, 7}, {3, 7}, dn({1}, {1})},
      {"both transposed", {7, 5}, {3, 7}, dn({0}, {1})},
      {"leading batch", {2, 5, 7}, {2, 7, 3}, dn({2}, {1}, {0}, {0})},
      {"batch, transposed operands", {2, 7, 5}, {2, 3, 7}, dn({1}, {2}, {0}, {0})},
      {"batch not leading", {5, 2, 7}, {7, 3, 2}, dn({2}, {0}, {1}, {2})},
      {"batch last on both", {5, 7, 3}, {7, 4, 3}, dn({1}, {0}, {2}, {2})},
      {"two batch dims, swapped on rhs", {2, 3, 4, 5}, {3, 2, 5, 6}, dn({3}, {2}, {0, 1}, {1, 0})},
      {"two contracting dims", {4, 3, 5}, {5, 6, 3}, dn({1, 2}, {2, 0})},
      {"contracting split around free", {3, 4, 5}, {3, 5, 6}, dn({0, 2}, {0, 1})},
      {"contracting dims reversed", {4, 3, 5}, {3, 5, 6}, dn({2, 1}, {1, 0})},
      {"several free dims", {2, 3, 4}, {5, 3, 2}, dn({1}, {1})},
      {"everything mixed", {3, 2, 4, 5}, {5, 6, 2, 3}, dn({3, 0}, {0, 3}, {1}, {2})},
      {"vector dot", {9}, {9}, dn({0}, {0})},
      {"matrix-vector", {4, 9}, {9}, dn({1}, {0})},
      {"vector-matrix", {9}, {9, 4}, dn({0}, {0})},
      {"outer product (no contraction)", {4}, {3}, dn({}, {})},
      {"batched outer product", {2, 4}, {2, 3}, dn({}, {}, {0}, {0})},
      {"M = 1", {1, 7}, {7, 3}, dn({1}, {0})},
      {"N = 1", {5, 7}, {7, 1}, dn({1}, {0})},
      {"K = 1", {5, 1}, {1, 3}, dn({1}, {0})},
      {"K = 1 transposed", {1, 5}, {3, 1}, dn({0}, {1})},
      {"M = N = K = 1 with batch", {3, 1, 1}, {3, 1, 1}, dn({2}, {1}, {0}, {0})},
      {"size-1 dims among free", {1, 5, 1, 7}, {7, 1, 3}, dn({3}, {0})},
      {"M = 0", {0, 7}, {7, 3}, dn({1}, {0})},
      {"N = 0", {5, 7}, {7, 0}, dn({1}, {0})},
      {"K = 0", {5, 0}, {0, 3}, dn({1}, {0})},
      {"K = 0 batched", {2, 5, 0}, {2, 0, 3}, dn({2}, {1}, {0}, {0})},
      {"B = 0", {0, 5, 7}, {0, 7, 3}, dn({2}, {1}, {0}, {0})},
      {"larger, transposed lhs", {70, 40}, {70, 33}, dn({0}, {0})},
      {"larger batched, packed rhs", {3, 33, 65}, {65, 3, 20}, dn({2}, {0}, {0}, {1})},
  };
  return c;
}

TEST(DotGeneralKernel, F32AllLayouts) {
  for (const DotCase& c : cases()) check(DType::f32, c);
}
TEST(DotGeneralKernel, F64AllLayouts) {
  for (const DotCase& c : cases()) check(DType::f64, c);
}
TEST(DotGeneralKernel, F16AllLayouts) {
  for (const DotCase& c : cases()) check(DType::f16, c);
}
TEST(DotGeneralKernel, BF16AllLayouts) {
  for (const DotCase& c : cases()) check(DType::bf16, c);
}
TEST(DotGeneralKernel, I32AllLayouts) {
  for (const DotCase& c : cases()) check(DType::i32, c);
}
TEST(DotGeneralKernel, BoolAllLayouts) {
  for (const DotCase& c : cases()) check(DType::boolean, c);
}

TEST(DotGeneralKernel, IntegerAndBoolLargeEnoughToCrossBlocks) {
  for (DType d : {DType::i32, DType::boolean}) {
    check(d, {"blocked", {3, 300}, {300, 600}, dn({1}, {0})});
    check(d, {"blocked, rhs transposed", {3, 300}, {600, 300}, dn({1}, {1})});
    check(d, {"blocked, lhs transposed, batched", {2, 70, 3}, {2, 70, 260}, dn({1}, {1}, {0}, {0})});
  }
}

TEST(DotGeneralKernel, HalfAccumulatesInFloat) {
  // 4096 products of 1 * 1: an f16 accumulator would stop at 2048.
  Buffer a = filled(DType::f16, {1, 4096}, std::vector<double>(4096, 1.0));
  Buffer b = filled(DType::f16, {4096, 1}, std::vector<double>(4096, 1.0));
  Buffer y = run1(Primitive::dot_general, ir::DotGeneralParams{dn({1}, {0})}, {&a, &b}, DType::f16, {1, 1});
  EXPECT_EQ(y.get(0), 4096);
}

}  // namespace
}  // namespace ferry::kernel_test
