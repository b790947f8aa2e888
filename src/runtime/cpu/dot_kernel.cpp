// dot_general. The operands are seen as batches of matrices: lhs [B, M, K] and rhs [B, K, N], where
// B, M, K, N flatten the batch, lhs free, contracting and rhs free dimensions (in the order the
// dimension numbers and the operand give them). The result is [batch..., lhs free..., rhs free...],
// i.e. dense [B, M, N].
//
// f32 and f64 call OpenBLAS gemm once per batch (and block, see gemm_split). An operand is used in
// place when its rows and its columns each flatten to one stride and one of the two is 1 (a
// transpose flag covers [K, M] and [N, K]); batch dimensions keep their own strides. Otherwise it
// is first packed into a dense [B, M, K] or [B, K, N] copy.
// f16 and bf16 are widened to f32, multiplied by sgemm (accumulating in float) and rounded once.
// i32 (wrapping) and bool (or of ands) use a cache-blocked loop over packed operands.
//
// Packed copies and widened operands live in the call's workspace, which dot_general_workspace
// declares for the types (the same decisions, made on the shapes alone).
#include <algorithm>
#include <climits>
#include <cstring>
#include <optional>

#include <cblas.h>

#include "prims/dot_layout.h"
#include "runtime/cpu/check.h"
#include "runtime/cpu/dims.h"
#include "runtime/cpu/dtype_dispatch.h"
#include "runtime/cpu/kernel_groups.h"
#include "runtime/cpu/parallel.h"
#include "runtime/cpu/strided_copy.h"

namespace ferry::runtime::cpu {
namespace {

// Elements one task of an elementwise pass (widening, rounding) converts at least.
constexpr int64_t kGrainElements = 32768;

// Dimension groups of one operand: batch, free and contracting, each in its logical order.
struct Groups {
  Dims64 batch, free, contracting;
};

struct Problem {
  Groups lhs, rhs;
  int64_t B = 1, M = 1, N = 1, K = 1;
};

int64_t product(const Shape& shape, const Dims64& dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= shape[static_cast<size_t>(d)];
  return p;
}

Groups groups_of(const ir::Equation& eq, const Shape& shape, const ir::Dims& batch, const ir::Dims& contracting) {
  const auto r = static_cast<int64_t>(shape.size());
  DimVec<bool> used(shape.size(), false);
  for (const ir::Dims* ds : {&batch, &contracting})
    for (int64_t d : *ds) {
      if (d < 0 || d >= r || used[static_cast<size_t>(d)]) kernel_bug(eq, "bad dimension numbers");
      used[static_cast<size_t>(d)] = true;
    }
  Groups g{Dims64::from(batch), {}, Dims64::from(contracting)};
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
  Dims64 expected;
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
  if (!std::equal(expected.begin(), expected.end(), out.shape.begin(), out.shape.end()))
    kernel_bug(eq, "result shape does not match the dimension numbers");
  p.B = product(lhs.shape, p.lhs.batch);
  p.M = product(lhs.shape, p.lhs.free);
  p.K = product(lhs.shape, p.lhs.contracting);
  p.N = product(rhs.shape, p.rhs.free);
  return p;
}

// One operand as a batch of row-major matrices: rows x cols, or transposed (stored cols x rows).
template <class F> struct MatrixView {
  const F* data = nullptr;
  prims::MatrixLayout layout;
  bool transposed() const { return layout.transposed; }
  int64_t ld() const { return layout.ld; }
  const F* matrix(int64_t i) const { return data + layout.batch_offset(i); }
};

// How an operand is read: in place (prims::matrix_layout), or (nullopt) packed first. `outer`
// indexes the matrix rows as the gemm sees them (M for lhs, K for rhs), `inner` the columns.
template <class F>
std::optional<MatrixView<F>> direct_view(const F* data, const Shape& shape, const Dims64& batch, const Dims64& outer,
                                         const Dims64& inner, int64_t, int64_t) {
  const auto layout = prims::matrix_layout(shape, batch, outer, inner);
  if (!layout) return std::nullopt;
  return MatrixView<F>{data, *layout};
}

// The operand in place, or packed into dense [batch, rows, cols] in the workspace.
template <class F>
MatrixView<F> view_or_pack(const F* data, const Shape& shape, const Dims64& batch, const Dims64& outer,
                           const Dims64& inner, int64_t rows, int64_t cols, Workspace& workspace) {
  if (auto view = direct_view(data, shape, batch, outer, inner, rows, cols)) return *view;
  Dims64 strides(shape.size());
  dense_strides(shape, strides);
  Dims64 order = batch;
  for (int64_t d : outer) order.push_back(d);
  for (int64_t d : inner) order.push_back(d);
  Dims64 sizes(order.size()), src(order.size()), dst(order.size());
  int64_t n = 1;
  for (size_t k = 0; k < order.size(); ++k) {
    sizes[k] = shape[static_cast<size_t>(order[k])];
    src[k] = strides[static_cast<size_t>(order[k])];
    n *= sizes[k];
  }
  dense_strides(sizes, dst);
  F* packed = workspace.take<F>(n);
  strided_copy(sizeof(F), sizes, packed, dst, data, src);
  MatrixView<F> view{packed, {}};
  view.layout.batch_rank = 1;
  view.layout.batch_sizes[0] = std::max<int64_t>(1, n / std::max<int64_t>(1, rows * cols));
  view.layout.batch_strides[0] = rows * cols;
  view.layout.ld = std::max<int64_t>(1, cols);
  return view;
}

// The workspace view_or_pack takes for an operand of this shape.
template <class F>
void add_packing(WorkspaceSize& size, const Shape& shape, const Dims64& batch, const Dims64& outer, const Dims64& inner,
                 int64_t rows, int64_t cols) {
  if (!direct_view<F>(nullptr, shape, batch, outer, inner, rows, cols)) size.add<F>(num_elements(shape));
}

// How one gemm of M x N x K is cut into single-threaded gemms on the pool: along M (each block
// re-packs all of B, K x N) or along N (each re-packs A, M x K), whichever re-packs less, into at
// most 4 blocks of at least 32 MFLOP and 32 rows or columns. Packing is memory traffic that
// OpenBLAS's own threads share and separate calls do not, so the cut stays coarse (16 blocks of
// 16 rows measured 1.1-1.8x slower on scan_mlp than one threaded gemm). Fixed by the sizes, never
// the thread count: the bits do not depend on FERRY_NUM_THREADS.
struct GemmSplit {
  bool along_n = false;
  int64_t blocks = 1;
};

GemmSplit gemm_split(int64_t M, int64_t N, int64_t K) {
  constexpr int64_t kMinFlops = int64_t{32} << 20, kMaxBlocks = 4, kMinSide = 32;
  const bool along_n = N > M;
  const int64_t side = along_n ? N : M;
  const double flops = 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  const auto by_work = static_cast<int64_t>(std::min(flops / kMinFlops, static_cast<double>(kMaxBlocks)));
  return {along_n, std::clamp<int64_t>(std::min(by_work, side / kMinSide), 1, kMaxBlocks)};
}

template <class F>
void gemm(const Problem& p, const F* lhs, const Shape& ls, const F* rhs, const Shape& rs, F* out, Workspace& workspace) {
  const auto a = view_or_pack(lhs, ls, p.lhs.batch, p.lhs.free, p.lhs.contracting, p.M, p.K, workspace);
  const auto b = view_or_pack(rhs, rs, p.rhs.batch, p.rhs.contracting, p.rhs.free, p.K, p.N, workspace);
  const auto ta = a.transposed() ? CblasTrans : CblasNoTrans;
  const auto tb = b.transposed() ? CblasTrans : CblasNoTrans;
  num_threads();  // makes the pool before the first BLAS call: that turns OpenBLAS's threads off
  for (int64_t v : {p.M, p.N, p.K, a.ld(), b.ld()})
    if (v > INT_MAX)  // OpenBLAS takes 32-bit sizes
      throw Error(ErrorCode::unimplemented,
                  fmt::format("dot_general: a matrix dimension of {} exceeds the CPU backend's BLAS limit", v));
  // One single-threaded gemm per (batch, block), run on the pool: OpenBLAS's own threads are off
  // (parallel.cpp).
  const GemmSplit split = gemm_split(p.M, p.N, p.K);
  const int64_t side = split.along_n ? p.N : p.M;
  parallel_for(p.B * split.blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t i = t / split.blocks, blk = t % split.blocks;
      const int64_t s0 = side * blk / split.blocks, s1 = side * (blk + 1) / split.blocks;
      const F* ai = a.matrix(i);
      const F* bi = b.matrix(i);
      F* ci = out + i * p.M * p.N;
      int m = static_cast<int>(p.M), n = static_cast<int>(p.N);
      if (split.along_n) {  // columns s0..s1 of op(B) and of C
        bi += b.transposed() ? s0 * b.ld() : s0;
        ci += s0;
        n = static_cast<int>(s1 - s0);
      } else {  // rows s0..s1 of op(A) and of C
        ai += a.transposed() ? s0 : s0 * a.ld();
        ci += s0 * p.N;
        m = static_cast<int>(s1 - s0);
      }
      if constexpr (std::is_same_v<F, float>)
        cblas_sgemm(CblasRowMajor, ta, tb, m, n, p.K, 1.0f, ai, a.ld(), bi, b.ld(), 0.0f, ci, p.N);
      else
        cblas_dgemm(CblasRowMajor, ta, tb, m, n, p.K, 1.0, ai, a.ld(), bi, b.ld(), 0.0, ci, p.N);
    }
  });
}

// i32 (wrapping) and bool (or of ands; T is uint8_t for bool). For each panel of kBlockK rows and
// kBlockN columns of the rhs (32 KB, so it stays in L1), every lhs row adds its contribution into its
// slice of the result, which is the accumulator.
template <class T>
void loop_dot(const Problem& p, const T* lhs, const Shape& ls, const T* rhs, const Shape& rs, T* out,
              Workspace& workspace) {
  constexpr bool kBool = std::is_same_v<T, uint8_t>;
  using U = std::conditional_t<kBool, uint8_t, uint32_t>;  // unsigned: wraps without UB
  const auto a = view_or_pack(lhs, ls, p.lhs.batch, p.lhs.free, p.lhs.contracting, p.M, p.K, workspace);
  const auto b = view_or_pack(rhs, rs, p.rhs.batch, p.rhs.contracting, p.rhs.free, p.K, p.N, workspace);
  constexpr int64_t kBlockN = 256, kBlockK = 32;
  std::fill_n(out, p.B * p.M * p.N, T(0));
  const int64_t b_row = b.transposed() ? 1 : b.ld(), b_col = b.transposed() ? b.ld() : 1;  // strides of op(B)
  for (int64_t bi = 0; bi < p.B; ++bi) {
    const T* A0 = a.matrix(bi);
    const T* B0 = b.matrix(bi);
    U* C0 = reinterpret_cast<U*>(out) + bi * p.M * p.N;
    for (int64_t n0 = 0; n0 < p.N; n0 += kBlockN) {
      const int64_t nb = std::min(kBlockN, p.N - n0);
      for (int64_t k0 = 0; k0 < p.K; k0 += kBlockK) {
        const int64_t k1 = std::min(k0 + kBlockK, p.K);
        for (int64_t m = 0; m < p.M; ++m) {
          U* crow = C0 + m * p.N + n0;
          for (int64_t k = k0; k < k1; ++k) {
            const U x = static_cast<U>(a.transposed() ? A0[k * a.ld() + m] : A0[m * a.ld() + k]);
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

template <class H> float* widen(const H* x, int64_t n, Workspace& workspace) {
  float* f = workspace.take<float>(n);
  parallel_for(n, kGrainElements, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) f[i] = load(x[i]);
  });
  return f;
}

// The element type the matrix product runs in: f16 and bf16 widen to float, bool is a byte.
template <class T> using gemm_t = std::conditional_t<is_half_v<T>, float, std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>>;

}  // namespace

void dot_general_kernel(const ir::Equation& eq, std::span<const ConstView> inputs,
                        std::span<const MutView> outputs, Workspace& workspace) {
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
      gemm(p, l, lt.shape, r, rt.shape, o, workspace);
    } else if constexpr (is_half_v<T>) {
      const float* lf = widen(l, lt.num_elements(), workspace);
      const float* rf = widen(r, rt.num_elements(), workspace);
      float* of = workspace.take<float>(ot.num_elements());
      gemm(p, lf, lt.shape, rf, rt.shape, of, workspace);
      parallel_for(ot.num_elements(), kGrainElements, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i] = store<T>(of[i]);
      });
    } else if constexpr (std::is_same_v<T, bool>) {
      loop_dot(p, inputs[0].as<uint8_t>(), lt.shape, inputs[1].as<uint8_t>(), rt.shape, outputs[0].as<uint8_t>(),
               workspace);
    } else {
      loop_dot(p, l, lt.shape, r, rt.shape, o, workspace);
    }
  });
}

int64_t dot_general_workspace(const ir::Equation& eq, std::span<const ir::Type* const> inputs,
                              std::span<const ir::Type* const> outputs) {
  if (inputs.size() != 2 || outputs.size() != 1) kernel_bug(eq, "expects two operands and one result");
  const ir::Type &lt = *inputs[0], &rt = *inputs[1], &ot = *outputs[0];
  const Problem p = problem_of(eq, lt, rt, ot);
  WorkspaceSize size;
  if (ot.num_elements() == 0 || p.K == 0) return 0;
  visit_dtype(ot.dtype, [&]<class T>(TypeTag<T>) {
    using F = gemm_t<T>;
    if constexpr (is_half_v<T>) {
      size.add<float>(lt.num_elements());
      size.add<float>(rt.num_elements());
      size.add<float>(ot.num_elements());
    }
    add_packing<F>(size, lt.shape, p.lhs.batch, p.lhs.free, p.lhs.contracting, p.M, p.K);
    add_packing<F>(size, rt.shape, p.rhs.batch, p.rhs.contracting, p.rhs.free, p.K, p.N);
  });
  return size.bytes;
}

}  // namespace ferry::runtime::cpu
