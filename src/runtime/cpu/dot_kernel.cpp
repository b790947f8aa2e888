// dot_general. The operands are seen as batches of matrices: lhs [B, M, K] and rhs [B, K, N], where
// B, M, K, N flatten the batch, lhs free, contracting and rhs free dimensions (in the order the
// dimension numbers and the operand give them). The result is [batch..., lhs free..., rhs free...],
// i.e. dense [B, M, N].
//
// Products run oneDNN's matmul (onednn_gemm.h), whose kernels follow the path dot_path.h chose from
// the processor's features, where it has a kernel that keeps its memory in the plan: bf16 on the
// bf16 instructions, accumulating in f32 and rounding once, and f32 products large enough for its
// call overhead whose scratch is small (plan_onednn). The rest run OpenBLAS (openblas.h, its core
// chosen from cpuid too): f32 and f64 as they are, f16 and bf16 widened to f32 first and rounded
// once after. Either way one single-threaded gemm runs per batch and block (see gemm_split) on
// ferry's pool.
// An operand is used in place when its rows and its columns each flatten to one stride and one of
// the two is 1 (a transpose flag covers [K, M] and [N, K]); batch dimensions keep their own
// strides. Otherwise it is first packed into a dense [B, M, K] or [B, K, N] copy.
// i32 (wrapping) and bool (or of ands) use a cache-blocked loop over packed operands.
//
// Packed copies, widened operands and oneDNN's scratch memory live in the call's workspace, which
// dot_general_workspace declares from the same plan (DotPlan: decisions made on the shapes alone).
#include <algorithm>
#include <climits>
#include <cstring>
#include <optional>

#include "prims/dot_layout.h"
#include "runtime/cpu/check.h"
#include "runtime/cpu/dims.h"
#include "runtime/cpu/dot_path.h"
#include "runtime/cpu/dtype_dispatch.h"
#include "runtime/cpu/kernel_groups.h"
#include "runtime/cpu/onednn_gemm.h"
#include "runtime/cpu/openblas.h"
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

// How one operand is read: `outer` indexes the matrix rows as the gemm sees them (M for lhs, K for
// rhs), `inner` the columns.
struct Operand {
  const Shape* shape;
  const Dims64* batch;
  const Dims64* outer;
  const Dims64* inner;
  int64_t rows, cols;
};

Operand lhs_operand(const Problem& p, const Shape& s) { return {&s, &p.lhs.batch, &p.lhs.free, &p.lhs.contracting, p.M, p.K}; }
Operand rhs_operand(const Problem& p, const Shape& s) { return {&s, &p.rhs.batch, &p.rhs.contracting, &p.rhs.free, p.K, p.N}; }

// The layout in place (prims::matrix_layout), or nullopt where the operand must be packed.
std::optional<prims::MatrixLayout> in_place(const Operand& o) {
  return prims::matrix_layout(*o.shape, *o.batch, *o.outer, *o.inner);
}

// The layout of the operand packed into dense [batch, rows, cols].
prims::MatrixLayout packed_layout(const Operand& o) {
  prims::MatrixLayout l;
  const int64_t n = num_elements(*o.shape);
  l.batch_rank = 1;
  l.batch_sizes[0] = std::max<int64_t>(1, n / std::max<int64_t>(1, o.rows * o.cols));
  l.batch_strides[0] = o.rows * o.cols;
  l.ld = std::max<int64_t>(1, o.cols);
  return l;
}

// Whether each matrix of a layout is one dense block (rows after rows, or columns after columns),
// as oneDNN's brgemm kernels need.
bool dense(const prims::MatrixLayout& l, int64_t rows, int64_t cols) {
  return l.ld == std::max<int64_t>(1, l.transposed ? rows : cols);
}

// The operand in place, or (`pack`) copied into dense [batch, rows, cols] in the workspace.
template <class F> MatrixView<F> view_or_pack(const F* data, const Operand& o, bool pack, Workspace& workspace) {
  if (!pack) return MatrixView<F>{data, *in_place(o)};
  const Shape& shape = *o.shape;
  Dims64 strides(shape.size());
  dense_strides(shape, strides);
  Dims64 order = *o.batch;
  for (int64_t d : *o.outer) order.push_back(d);
  for (int64_t d : *o.inner) order.push_back(d);
  Dims64 sizes(order.size()), src(order.size()), dst(order.size());
  for (size_t k = 0; k < order.size(); ++k) {
    sizes[k] = shape[static_cast<size_t>(order[k])];
    src[k] = strides[static_cast<size_t>(order[k])];
  }
  dense_strides(sizes, dst);
  F* packed = workspace.take<F>(num_elements(shape));
  strided_copy(sizeof(F), sizes, packed, dst, data, src);
  return MatrixView<F>{packed, packed_layout(o)};
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

GemmSplit gemm_split(int64_t M, int64_t N, int64_t K, bool m_only) {
  constexpr int64_t kMinFlops = int64_t{32} << 20, kMaxBlocks = 4, kMinSide = 32;
  const bool along_n = !m_only && N > M;
  const int64_t side = along_n ? N : M;
  const double flops = 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  const auto by_work = static_cast<int64_t>(std::min(flops / kMinFlops, static_cast<double>(kMaxBlocks)));
  return {along_n, std::clamp<int64_t>(std::min(by_work, side / kMinSide), 1, kMaxBlocks)};
}

// Calls of one prepared gemm that may run at once, each with its own scratch memory (the
// workspace holds one scratch per lane). Fixed, not the thread count, so that the plan does not
// depend on FERRY_NUM_THREADS; more threads than lanes share them.
constexpr int64_t kScratchLanes = 8;
// The smallest f32 product oneDNN takes, and the size from which it may take more scratch (see
// plan_onednn).
constexpr double kMinOneDnnFlops = 2.0 * 1024 * 1024, kLargeFlops = 128.0 * 1024 * 1024;

// oneDNN's products for a cut of M rows into `blocks` blocks of rows (sizes small_side and
// small_side + 1): one per block size, and the most scratch one call needs.
struct RowGemms {
  int64_t small_side = 0;
  const PreparedGemm* gemm[2] = {};
  int64_t scratch = 0;  // bytes per call
};

// `shape` gives everything but the rows; nullopt where oneDNN has no usable kernel for a block.
std::optional<RowGemms> row_gemms(GemmShape shape, int64_t M, int64_t blocks) {
  RowGemms r{.small_side = M / blocks};
  for (int64_t blk = 0; blk < blocks; ++blk) {
    shape.m = M * (blk + 1) / blocks - M * blk / blocks;
    const PreparedGemm*& g = r.gemm[shape.m - r.small_side];
    if (g) continue;
    g = prepare_gemm(shape);
    if (!g) return std::nullopt;
    r.scratch = std::max(r.scratch, gemm_scratch_bytes(*g));
  }
  return r;
}

// How a product runs, decided on the shapes alone, so that the kernel and its workspace
// declaration agree.
struct DotPlan {
  DType gemm_type = DType::f32;  // what the gemms multiply: the operands' type, or f32 where widened
  bool widened = false;          // a half type widened to f32 first
  bool onednn = false;           // else OpenBLAS (f32, f64)
  bool pack_lhs = false, pack_rhs = false;
  GemmSplit split;
  RowGemms rows;  // oneDNN's products for the split (its scratch: bytes per lane)
  int64_t lanes = 1;
};

// oneDNN for the product in `type`, or false where it has no kernel that keeps its memory in the
// plan, or (f32) where OpenBLAS serves better. Its brgemm kernels need each matrix dense, so the product is cut along M only (a block of
// rows of C and of op(A) is dense where op(A) is stored untransposed). Half types are packed dense
// where they are not (a copy of the operand in its own type costs less than widening all three to
// f32); f32 is not (OpenBLAS reads any strides as fast).
bool plan_onednn(DotPlan& d, const Problem& p, DType type, const Operand& lhs, const Operand& rhs) {
  const auto a_in = in_place(lhs), b_in = in_place(rhs);
  d.split = gemm_split(p.M, p.N, p.K, /*m_only=*/true);
  const bool a_ok = a_in && dense(*a_in, p.M, p.K) && (!a_in->transposed || d.split.blocks == 1);
  const bool b_ok = b_in && dense(*b_in, p.K, p.N);
  if (type == DType::f32 && (!a_ok || !b_ok)) return false;
  // Cutting along M only must not cost the parallelism a cut along N would give.
  if (type == DType::f32 && d.split.blocks < gemm_split(p.M, p.N, p.K, false).blocks) return false;
  d.pack_lhs = !a_ok;
  d.pack_rhs = !b_ok;
  const prims::MatrixLayout a = a_ok ? *a_in : packed_layout(lhs), b = b_ok ? *b_in : packed_layout(rhs);
  const auto rows = row_gemms({.dtype = type, .n = p.N, .k = p.K, .trans_a = a.transposed, .trans_b = b.transposed,
                               .lda = a.ld, .ldb = b.ld, .ldc = p.N},
                              p.M, d.split.blocks);
  if (!rows) return false;
  d.rows = *rows;
  d.lanes = std::min(p.B * d.split.blocks, kScratchLanes);
  // f32 products have a second engine (OpenBLAS, with its core chosen from cpuid) that needs no
  // scratch and costs less per call: oneDNN takes the product where it is big enough for its call
  // overhead (measured: a 16x32x64 product ran at a third of OpenBLAS's rate) and its scratch is
  // small beside the operands (it reaches 650 KiB for a transposed lhs): under 1/32 of them, or
  // under 1/8 for a product of kLargeFlops or more, where oneDNN runs faster (256x1024x1024 on a
  // 2-thread Zen 5: 367-382 against 285-340 GFLOP/s, bench/dot_bench beside FERRY_DOT_PATH=openblas;
  // at 32-64 MFLOP the two were even).
  if (type == DType::f32) {
    const double flops = 2.0 * static_cast<double>(p.M) * static_cast<double>(p.N) * static_cast<double>(p.K) *
                         static_cast<double>(p.B);
    const int64_t operands = (p.M * p.K + p.K * p.N + p.M * p.N) * p.B * 4;
    const int64_t share = flops >= kLargeFlops ? 8 : 32;
    if (flops < kMinOneDnnFlops || d.rows.scratch * d.lanes * share > operands) return false;
  }
  d.gemm_type = type;
  d.onednn = true;
  return true;
}

DotPlan plan_of(const Problem& p, DType type, const Shape& ls, const Shape& rs) {
  const Operand lhs = lhs_operand(p, ls), rhs = rhs_operand(p, rs);
  DotPlan d;
  if (type != DType::f64 && plan_onednn(d, p, type, lhs, rhs)) return d;
  d = DotPlan{};
  d.widened = (type == DType::f16 || type == DType::bf16);
  if (d.widened && plan_onednn(d, p, DType::f32, lhs, rhs)) {
    d.widened = true;
    return d;
  }
  // OpenBLAS: any strides in place, cut along M or N.
  d = DotPlan{};
  d.widened = (type == DType::f16 || type == DType::bf16);
  d.gemm_type = type == DType::f64 ? DType::f64 : DType::f32;
  d.split = gemm_split(p.M, p.N, p.K, false);
  d.pack_lhs = !in_place(lhs);
  d.pack_rhs = !in_place(rhs);
  return d;
}

// One (batch, block) piece of the product: where op(A), op(B) and C start, and its m and n.
template <class F> struct Piece {
  const F* a;
  const F* b;
  F* c;
  int64_t m, n;
};

template <class F>
Piece<F> piece(const Problem& p, const GemmSplit& split, const MatrixView<F>& a, const MatrixView<F>& b, F* out,
               int64_t t) {
  const int64_t side = split.along_n ? p.N : p.M;
  const int64_t i = t / split.blocks, blk = t % split.blocks;
  const int64_t s0 = side * blk / split.blocks, s1 = side * (blk + 1) / split.blocks;
  Piece<F> x{a.matrix(i), b.matrix(i), out + i * p.M * p.N, p.M, p.N};
  if (split.along_n) {  // columns s0..s1 of op(B) and of C
    x.b += b.transposed() ? s0 * b.ld() : s0;
    x.c += s0;
    x.n = s1 - s0;
  } else {  // rows s0..s1 of op(A) and of C
    x.a += a.transposed() ? s0 : s0 * a.ld();
    x.c += s0 * p.N;
    x.m = s1 - s0;
  }
  return x;
}

// The workspace scratch the plan's lanes take (after any packing).
int64_t scratch_take(const DotPlan& d) {
  return d.onednn && d.rows.scratch > 0 ? Workspace::piece(d.rows.scratch) * d.lanes : 0;
}

// The blocks of rows a planned oneDNN product runs in on this pool. Each block packs all of op(B)
// again, so where the pool has fewer threads than the plan has blocks, fewer blocks that still
// give every thread the same number of pieces run faster (on a 2-thread Zen 5, 256x1024x1024 f32
// in 2 blocks ran 8% faster than in 4). oneDNN's brgemm sums each element over K in the same order
// whichever rows a call holds (ParallelKernels.ThreefryAndDotGiveTheSameBytesForEveryThreadCount
// checks it), so the bits do not change; nor does the workspace: a cut whose gemms need more
// scratch than the plan declared is not taken.
struct RunSplit {
  GemmSplit split;
  RowGemms rows;
};

RunSplit run_split(const Problem& p, const DotPlan& d) {
  const RunSplit planned{d.split, d.rows};
  const int64_t threads = num_threads();
  if (d.split.along_n || threads >= p.B * d.split.blocks) return planned;
  int64_t blocks = 1;
  while (blocks < d.split.blocks && (p.B * blocks) % threads != 0) ++blocks;
  if (blocks == d.split.blocks) return planned;
  const auto rows = row_gemms(gemm_shape(*d.rows.gemm[0]), p.M, blocks);
  if (!rows || rows->scratch > d.rows.scratch) return planned;
  return {{false, blocks}, *rows};
}

template <class F>
void onednn_gemms(const Problem& p, const DotPlan& d, const MatrixView<F>& a, const MatrixView<F>& b, F* out,
                  Workspace& workspace) {
  const RunSplit r = run_split(p, d);
  const int64_t tasks = p.B * r.split.blocks, lanes = std::min(tasks, d.lanes);
  char* scratch = scratch_take(d) > 0 ? workspace.take<char>(scratch_take(d)) : nullptr;
  const int64_t lane_bytes = Workspace::piece(d.rows.scratch);
  // Lane l runs pieces l, l + lanes, ...: each lane's scratch serves one call at a time.
  parallel_for(lanes, 1, [&](int64_t begin, int64_t end) {
    for (int64_t lane = begin; lane < end; ++lane)
      for (int64_t t = lane; t < tasks; t += lanes) {
        const Piece<F> x = piece(p, r.split, a, b, out, t);
        run_gemm(*r.rows.gemm[x.m - r.rows.small_side], x.a, x.b, x.c, scratch ? scratch + lane * lane_bytes : nullptr);
      }
  });
}

// One single-threaded OpenBLAS gemm per (batch, block), run on the pool.
template <class F>
void openblas_gemms(const Problem& p, const DotPlan& d, const MatrixView<F>& a, const MatrixView<F>& b, F* out) {
  const int ta = a.transposed() ? kCblasTrans : kCblasNoTrans;
  const int tb = b.transposed() ? kCblasTrans : kCblasNoTrans;
  const OpenBlas& blas = openblas();
  for (int64_t v : {p.M, p.N, p.K, a.ld(), b.ld()})
    if (v > INT_MAX)  // OpenBLAS takes 32-bit sizes
      throw Error(ErrorCode::unimplemented,
                  fmt::format("dot_general: a matrix dimension of {} exceeds the CPU backend's BLAS limit", v));
  parallel_for(p.B * d.split.blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const Piece<F> x = piece(p, d.split, a, b, out, t);
      const int m = static_cast<int>(x.m), n = static_cast<int>(x.n);
      if constexpr (std::is_same_v<F, float>)
        blas.sgemm(kCblasRowMajor, ta, tb, m, n, p.K, 1.0f, x.a, a.ld(), x.b, b.ld(), 0.0f, x.c, p.N);
      else if constexpr (std::is_same_v<F, double>)
        blas.dgemm(kCblasRowMajor, ta, tb, m, n, p.K, 1.0, x.a, a.ld(), x.b, b.ld(), 0.0, x.c, p.N);
      else
        throw Error(ErrorCode::internal, "dot_general: a half-precision product for OpenBLAS was not widened");
    }
  });
}

template <class F>
void gemm(const Problem& p, const DotPlan& d, const F* lhs, const Shape& ls, const F* rhs, const Shape& rs, F* out,
          Workspace& workspace) {
  const auto a = view_or_pack(lhs, lhs_operand(p, ls), d.pack_lhs, workspace);
  const auto b = view_or_pack(rhs, rhs_operand(p, rs), d.pack_rhs, workspace);
  if (d.onednn) onednn_gemms(p, d, a, b, out, workspace);
  else openblas_gemms(p, d, a, b, out);
}

// The workspace a plan's gemm takes: packed operands (in the type multiplied), then scratch.
int64_t gemm_workspace(const DotPlan& d, const Shape& ls, const Shape& rs) {
  WorkspaceSize size;
  const int64_t item = static_cast<int64_t>(dtype_size(d.gemm_type));
  if (d.pack_lhs) size.bytes += Workspace::piece(num_elements(ls) * item);
  if (d.pack_rhs) size.bytes += Workspace::piece(num_elements(rs) * item);
  return size.bytes + scratch_take(d);
}

// i32 (wrapping) and bool (or of ands; T is uint8_t for bool). For each panel of kBlockK rows and
// kBlockN columns of the rhs (32 KB, so it stays in L1), every lhs row adds its contribution into its
// slice of the result, which is the accumulator.
template <class T>
void loop_dot(const Problem& p, const T* lhs, const Shape& ls, const T* rhs, const Shape& rs, T* out,
              Workspace& workspace) {
  constexpr bool kBool = std::is_same_v<T, uint8_t>;
  using U = std::conditional_t<kBool, uint8_t, uint32_t>;  // unsigned: wraps without UB
  const Operand lo = lhs_operand(p, ls), ro = rhs_operand(p, rs);
  const auto a = view_or_pack(lhs, lo, !in_place(lo), workspace);
  const auto b = view_or_pack(rhs, ro, !in_place(ro), workspace);
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

// The element type the matrix product runs in for a loop: bool is a byte.
template <class T> using loop_t = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;

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
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || is_half_v<T>) {
      const DotPlan d = plan_of(p, ot.dtype, lt.shape, rt.shape);
      if constexpr (is_half_v<T>) {
        if (d.widened) {
          const float* lf = widen(l, lt.num_elements(), workspace);
          const float* rf = widen(r, rt.num_elements(), workspace);
          float* of = workspace.take<float>(ot.num_elements());
          gemm(p, d, lf, lt.shape, rf, rt.shape, of, workspace);
          parallel_for(ot.num_elements(), kGrainElements, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) o[i] = store<T>(of[i]);
          });
          return;
        }
      }
      gemm(p, d, l, lt.shape, r, rt.shape, o, workspace);
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
  if (ot.num_elements() == 0 || p.K == 0) return 0;
  WorkspaceSize size;
  visit_dtype(ot.dtype, [&]<class T>(TypeTag<T>) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || is_half_v<T>) {
      const DotPlan d = plan_of(p, ot.dtype, lt.shape, rt.shape);
      if (d.widened) {
        size.add<float>(lt.num_elements());
        size.add<float>(rt.num_elements());
        size.add<float>(ot.num_elements());
      }
      size.bytes += gemm_workspace(d, lt.shape, rt.shape);
      if (d.onednn) run_split(p, d);  // prepares the gemms a run on this pool takes, now rather than in a run
    } else {
      const Operand lo = lhs_operand(p, lt.shape), ro = rhs_operand(p, rt.shape);
      if (!in_place(lo)) size.add<loop_t<T>>(lt.num_elements());
      if (!in_place(ro)) size.add<loop_t<T>>(rt.num_elements());
    }
  });
  return size.bytes;
}

}  // namespace ferry::runtime::cpu
