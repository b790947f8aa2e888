// dot_general. The operands are seen as batches of matrices: lhs [B, M, K] and rhs [B, K, N], where
// B, M, K, N flatten the batch, lhs free, contracting and rhs free dimensions (in the order the
// dimension numbers and the operand give them). The result is [batch..., lhs free..., rhs free...],
// i.e. dense [B, M, N].
//
// f32 and f64 call OpenBLAS gemm once per batch. An operand is used in place when each group of its
// dimensions flattens to one stride and one of the two matrix strides is 1 (a transpose flag covers
// [K, M] and [N, K]); otherwise it is first packed into a dense [B, M, K] or [B, K, N] copy.
// f16 and bf16 are widened to f32, multiplied by sgemm (accumulating in float) and rounded once.
// i32 (wrapping) and bool (or of ands) use a cache-blocked loop over packed operands.
#include <algorithm>
#include <climits>
#include <cstring>
#include <optional>
#include <vector>

#include <cblas.h>

#include "runtime/cpu/check.h"
#include "runtime/cpu/dtype_dispatch.h"
#include "runtime/cpu/kernel_groups.h"
#include "runtime/cpu/strided_copy.h"

namespace ferry::runtime::cpu {
namespace {

// Dimension groups of one operand: batch, free and contracting, each in its logical order.
struct Groups {
  std::vector<int64_t> batch, free, contracting;
};

struct Problem {
  Groups lhs, rhs;
  int64_t B = 1, M = 1, N = 1, K = 1;
};

int64_t product(const Shape& shape, const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= shape[static_cast<size_t>(d)];
  return p;
}

Groups groups_of(const ir::Equation& eq, const Shape& shape, const ir::Dims& batch, const ir::Dims& contracting) {
  const auto r = static_cast<int64_t>(shape.size());
  std::vector<bool> used(shape.size(), false);
  for (const ir::Dims* ds : {&batch, &contracting})
    for (int64_t d : *ds) {
      if (d < 0 || d >= r || used[static_cast<size_t>(d)]) kernel_bug(eq, "bad dimension numbers");
      used[static_cast<size_t>(d)] = true;
    }
  Groups g{std::vector<int64_t>(batch.begin(), batch.end()),
           {},
           std::vector<int64_t>(contracting.begin(), contracting.end())};
  for (int64_t d = 0; d < r; ++d)
    if (!used[static_cast<size_t>(d)]) g.free.push_back(d);
  return g;
}

Problem problem_of(const ir::Equation& eq, const ir::Type& lhs, const ir::Type& rhs, const ir::Type& out) {
  const auto& dn = params_of<ir::DotGeneralParams>(eq).dims;
  if (dn.lhs_batch.size() != dn.rhs_batch.size() || dn.lhs_contracting.size() != dn.rhs_contracting.size())
    kernel_bug(eq, "batch or contracting dimension counts differ");
  Problem p{groups_of(eq, lhs.shape, dn.lhs_batch, dn.lhs_contracting),
            groups_of(eq, rhs.shape, dn.rhs_batch, dn.rhs_contracting)};
  Shape expected;
  for (size_t i = 0; i < dn.lhs_batch.size(); ++i) {
    const int64_t a = lhs.shape[static_cast<size_t>(dn.lhs_batch[i])];
    if (a != rhs.shape[static_cast<size_t>(dn.rhs_batch[i])]) kernel_bug(eq, "batch sizes differ");
    expected.push_back(a);
  }
  for (size_t i = 0; i < dn.lhs_contracting.size(); ++i)
    if (lhs.shape[static_cast<size_t>(dn.lhs_contracting[i])] != rhs.shape[static_cast<size_t>(dn.rhs_contracting[i])])
      kernel_bug(eq, "contracting sizes differ");
  for (int64_t d : p.lhs.free) expected.push_back(lhs.shape[static_cast<size_t>(d)]);
  for (int64_t d : p.rhs.free) expected.push_back(rhs.shape[static_cast<size_t>(d)]);
  if (expected != out.shape) kernel_bug(eq, "result shape does not match the dimension numbers");
  p.B = product(lhs.shape, p.lhs.batch);
  p.M = product(lhs.shape, p.lhs.free);
  p.K = product(lhs.shape, p.lhs.contracting);
  p.N = product(rhs.shape, p.rhs.free);
  return p;
}

// The single stride of a group of dimensions of a dense array, when its index flattens to one
// (row-major over the group's order); size-1 dimensions do not matter. nullopt when it does not
// flatten; 0 when the group has one element (any stride serves).
std::optional<int64_t> group_stride(const Shape& shape, const std::vector<int64_t>& strides,
                                    const std::vector<int64_t>& dims) {
  std::optional<int64_t> inner;  // stride of the innermost non-trivial dimension so far
  int64_t span = 1;             // elements the dimensions to the right cover
  for (size_t k = dims.size(); k-- > 0;) {
    const auto d = static_cast<size_t>(dims[k]);
    if (shape[d] == 1) continue;
    if (!inner) inner = strides[d];
    else if (strides[d] != *inner * span) return std::nullopt;
    span *= shape[d];
  }
  return inner ? *inner : 0;
}

// One operand as a batch of row-major matrices: rows x cols, or transposed (stored cols x rows).
template <class F> struct MatrixView {
  const F* data = nullptr;
  int64_t batch_stride = 0;
  bool transposed = false;
  int64_t ld = 0;
};

// `outer` indexes the matrix rows as the gemm sees them (M for lhs, K for rhs), `inner` the columns.
template <class F>
MatrixView<F> view_or_pack(const F* data, const Shape& shape, const std::vector<int64_t>& batch,
                           const std::vector<int64_t>& outer, const std::vector<int64_t>& inner, int64_t rows,
                           int64_t cols, std::vector<F>& scratch) {
  std::vector<int64_t> strides(shape.size());
  dense_strides(shape, strides);
  auto sb = group_stride(shape, strides, batch);
  auto so = group_stride(shape, strides, outer);
  auto si = group_stride(shape, strides, inner);
  if (sb && so && si) {
    // Stride 0 marks a one-element group, whose stride does not matter.
    const int64_t o = *so, i = *si;
    if (i == 0 && o == 0) return {data, *sb, false, 1};
    if (i == 0) return {data, *sb, false, o};  // one column
    if (o == 0) return i == 1 ? MatrixView<F>{data, *sb, false, cols} : MatrixView<F>{data, *sb, true, i};  // one row
    if (i == 1 && o >= cols) return {data, *sb, false, o};
    if (o == 1 && i >= rows) return {data, *sb, true, i};
  }
  // Pack into dense [batch, rows, cols].
  std::vector<int64_t> order(batch);
  order.insert(order.end(), outer.begin(), outer.end());
  order.insert(order.end(), inner.begin(), inner.end());
  std::vector<int64_t> sizes(order.size()), src(order.size()), dst(order.size());
  for (size_t k = 0; k < order.size(); ++k) {
    sizes[k] = shape[static_cast<size_t>(order[k])];
    src[k] = strides[static_cast<size_t>(order[k])];
  }
  dense_strides(sizes, dst);
  scratch.resize(static_cast<size_t>(num_elements(sizes)));
  strided_copy(sizeof(F), sizes, scratch.data(), dst, data, src);
  return {scratch.data(), rows * cols, false, std::max<int64_t>(1, cols)};
}

template <class F> void gemm(const Problem& p, const F* lhs, const Shape& ls, const F* rhs, const Shape& rs, F* out) {
  std::vector<F> lhs_scratch, rhs_scratch;
  const auto a = view_or_pack(lhs, ls, p.lhs.batch, p.lhs.free, p.lhs.contracting, p.M, p.K, lhs_scratch);
  const auto b = view_or_pack(rhs, rs, p.rhs.batch, p.rhs.contracting, p.rhs.free, p.K, p.N, rhs_scratch);
  const auto ta = a.transposed ? CblasTrans : CblasNoTrans;
  const auto tb = b.transposed ? CblasTrans : CblasNoTrans;
  for (int64_t v : {p.M, p.N, p.K, a.ld, b.ld})
    if (v > INT_MAX)  // OpenBLAS takes 32-bit sizes
      throw Error(ErrorCode::unimplemented,
                  fmt::format("dot_general: a matrix dimension of {} exceeds the CPU backend's BLAS limit", v));
  for (int64_t i = 0; i < p.B; ++i) {
    const F* ai = a.data + i * a.batch_stride;
    const F* bi = b.data + i * b.batch_stride;
    F* ci = out + i * p.M * p.N;
    if constexpr (std::is_same_v<F, float>)
      cblas_sgemm(CblasRowMajor, ta, tb, p.M, p.N, p.K, 1.0f, ai, a.ld, bi, b.ld, 0.0f, ci, p.N);
    else
      cblas_dgemm(CblasRowMajor, ta, tb, p.M, p.N, p.K, 1.0, ai, a.ld, bi, b.ld, 0.0, ci, p.N);
  }
}

// i32 (wrapping) and bool (or of ands; T is uint8_t for bool). For each panel of kBlockK rows and
// kBlockN columns of the rhs (32 KB, so it stays in L1), every lhs row adds its contribution into its
// slice of the result, which is the accumulator.
template <class T> void loop_dot(const Problem& p, const T* lhs, const Shape& ls, const T* rhs, const Shape& rs, T* out) {
  constexpr bool kBool = std::is_same_v<T, uint8_t>;
  using U = std::conditional_t<kBool, uint8_t, uint32_t>;  // unsigned: wraps without UB
  std::vector<T> ls_scratch, rs_scratch;
  const auto a = view_or_pack(lhs, ls, p.lhs.batch, p.lhs.free, p.lhs.contracting, p.M, p.K, ls_scratch);
  const auto b = view_or_pack(rhs, rs, p.rhs.batch, p.rhs.contracting, p.rhs.free, p.K, p.N, rs_scratch);
  constexpr int64_t kBlockN = 256, kBlockK = 32;
  std::fill_n(out, p.B * p.M * p.N, T(0));
  const int64_t b_row = b.transposed ? 1 : b.ld, b_col = b.transposed ? b.ld : 1;  // strides of op(B)
  for (int64_t bi = 0; bi < p.B; ++bi) {
    const T* A0 = a.data + bi * a.batch_stride;
    const T* B0 = b.data + bi * b.batch_stride;
    U* C0 = reinterpret_cast<U*>(out) + bi * p.M * p.N;
    for (int64_t n0 = 0; n0 < p.N; n0 += kBlockN) {
      const int64_t nb = std::min(kBlockN, p.N - n0);
      for (int64_t k0 = 0; k0 < p.K; k0 += kBlockK) {
        const int64_t k1 = std::min(k0 + kBlockK, p.K);
        for (int64_t m = 0; m < p.M; ++m) {
          U* crow = C0 + m * p.N + n0;
          for (int64_t k = k0; k < k1; ++k) {
            const U x = static_cast<U>(a.transposed ? A0[k * a.ld + m] : A0[m * a.ld + k]);
            if (x == 0) continue;
            const T* brow = B0 + k * b_row + n0 * b_col;
            if constexpr (kBool) {
              for (int64_t j = 0; j < nb; ++j) crow[j] |= static_cast<U>(brow[j * b_col] != 0);
            } else if (b_col == 1) {
              for (int64_t j = 0; j < nb; ++j) crow[j] += x * static_cast<U>(brow[j]);
            } else {
              for (int64_t j = 0; j < nb; ++j) crow[j] += x * static_cast<U>(brow[j * b_col]);
            }
          }
        }
      }
    }
  }
}

template <class H> std::vector<float> widen(const H* x, int64_t n) {
  std::vector<float> f(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) f[static_cast<size_t>(i)] = load(x[i]);
  return f;
}

}  // namespace

void dot_general_kernel(const ir::Equation& eq, std::span<const ConstView> inputs, std::span<const MutView> outputs) {
  expect_arity(eq, inputs, outputs, 2);
  const ir::Type& lt = *inputs[0].type;
  const ir::Type& rt = *inputs[1].type;
  const ir::Type& ot = *outputs[0].type;
  if (lt.dtype != rt.dtype || lt.dtype != ot.dtype) kernel_bug(eq, "operand dtypes differ");
  const Problem p = problem_of(eq, lt, rt, ot);
  if (ot.num_elements() == 0) return;
  if (p.K == 0) {  // an empty sum: zeros (all-zero bytes are zero in every dtype)
    std::memset(outputs[0].data, 0, static_cast<size_t>(ot.size_bytes()));
    return;
  }
  visit_dtype(ot.dtype, [&]<class T>(TypeTag<T>) {
    const T* l = inputs[0].as<T>();
    const T* r = inputs[1].as<T>();
    T* o = outputs[0].as<T>();
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      gemm(p, l, lt.shape, r, rt.shape, o);
    } else if constexpr (is_half_v<T>) {
      const std::vector<float> lf = widen(l, lt.num_elements()), rf = widen(r, rt.num_elements());
      std::vector<float> of(static_cast<size_t>(ot.num_elements()));
      gemm(p, lf.data(), lt.shape, rf.data(), rt.shape, of.data());
      for (size_t i = 0; i < of.size(); ++i) o[i] = store<T>(of[i]);
    } else if constexpr (std::is_same_v<T, bool>) {
      loop_dot(p, inputs[0].as<uint8_t>(), lt.shape, inputs[1].as<uint8_t>(), rt.shape, outputs[0].as<uint8_t>());
    } else {
      loop_dot(p, l, lt.shape, r, rt.shape, o);
    }
  });
}

}  // namespace ferry::runtime::cpu
