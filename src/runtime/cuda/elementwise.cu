// Elementwise kernels on the GPU: unary math, binary arithmetic, comparisons, select, clamp and
// convert, with the CPU kernels' semantics (runtime/cpu/elementwise_kernels.cpp): half types
// compute in float; max/min propagate NaN; i32 arithmetic wraps; i32 division and remainder by zero
// give XLA's results instead of trapping; bool add/max are "or", mul/min "and". One kernel per
// storage type, switching on the operation per element (cheap next to memory traffic), so nvcc
// instantiates six kernels here, not one per operation and type.
#include "runtime/cuda/device.cuh"

namespace ferry::runtime::cuda {
namespace {

__device__ inline int32_t wrap(uint32_t v) { return static_cast<int32_t>(v); }
__device__ inline uint32_t u(int32_t v) { return static_cast<uint32_t>(v); }

template <class C> __device__ inline C max_nan(C a, C b) { return ((a > b) | (a != a)) ? a : b; }
template <class C> __device__ inline C min_nan(C a, C b) { return ((a < b) | (a != a)) ? a : b; }

template <class C> __device__ C unary_float(Op op, C v) {
  switch (op) {
    case Op::neg: return -v;
    case Op::exp: return exp(v);
    case Op::log: return log(v);
    case Op::sin: return sin(v);
    case Op::cos: return cos(v);
    case Op::tanh: return tanh(v);
    case Op::logistic: return C(1) / (C(1) + exp(-v));
    case Op::sqrt: return sqrt(v);
    case Op::rsqrt: return C(1) / sqrt(v);
    case Op::abs: return fabs(v);
    case Op::sign: return v > C(0) ? C(1) : v < C(0) ? C(-1) : v;  // +-0 and NaN are their own sign
    case Op::erf: return erf(v);
    case Op::erf_inv: return erfinv(v);
    case Op::log1p: return log1p(v);
    case Op::expm1: return expm1(v);
    case Op::tan: return tan(v);
    case Op::atan: return atan(v);
    case Op::asin: return asin(v);
    case Op::acos: return acos(v);
    case Op::sinh: return sinh(v);
    case Op::cosh: return cosh(v);
    case Op::asinh: return asinh(v);
    case Op::acosh: return acosh(v);
    case Op::atanh: return atanh(v);
    case Op::cbrt: return cbrt(v);
    case Op::floor: return floor(v);
    case Op::ceil: return ceil(v);
    case Op::round: return round(v);  // half away from zero, as std::round
    default: return C(0);
  }
}

template <class C> __device__ C binary_float(Op op, C p, C q) {
  switch (op) {
    case Op::add: return p + q;
    case Op::sub: return p - q;
    case Op::mul: return p * q;
    case Op::div: return p / q;
    case Op::max: return max_nan(p, q);
    case Op::min: return min_nan(p, q);
    case Op::pow: return pow(p, q);
    case Op::rem: return fmod(p, q);
    case Op::atan2: return atan2(p, q);
    default: return C(0);
  }
}

__device__ int32_t int_pow(int32_t a, int32_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  uint32_t r = 1, base = u(a);
  for (uint32_t e = u(b); e != 0; e >>= 1) {
    if (e & 1u) r *= base;
    base *= base;
  }
  return wrap(r);
}

__device__ int32_t unary_int(Op op, int32_t v) {
  switch (op) {
    case Op::neg: return wrap(0u - u(v));
    case Op::abs: return v < 0 ? wrap(0u - u(v)) : v;
    case Op::sign: return int32_t{v > 0} - int32_t{v < 0};
    case Op::logical_not: return ~v;
    default: return 0;
  }
}

__device__ int32_t binary_int(Op op, int32_t p, int32_t q) {
  switch (op) {
    case Op::add: return wrap(u(p) + u(q));
    case Op::sub: return wrap(u(p) - u(q));
    case Op::mul: return wrap(u(p) * u(q));
    case Op::div: return q == 0 ? -1 : q == -1 ? wrap(0u - u(p)) : p / q;
    case Op::max: return p > q ? p : q;
    case Op::min: return p < q ? p : q;
    case Op::pow: return int_pow(p, q);
    case Op::rem: return q == 0 ? p : q == -1 ? 0 : p % q;
    case Op::logical_and: return p & q;
    case Op::logical_or: return p | q;
    case Op::logical_xor: return p ^ q;
    case Op::shift_left: return u(q) < 32u ? wrap(u(p) << u(q)) : 0;
    case Op::shift_right_logical: return u(q) < 32u ? wrap(u(p) >> u(q)) : 0;
    default: return 0;
  }
}

__device__ uint8_t bool_op(Op op, uint8_t p, uint8_t q) {
  const bool a = p != 0, b = q != 0;
  switch (op) {
    case Op::logical_not: return !a;
    case Op::add: case Op::max: case Op::logical_or: return a | b;
    case Op::mul: case Op::min: case Op::logical_and: return a & b;
    case Op::logical_xor: return a ^ b;
    default: return 0;
  }
}

template <class C> __device__ bool compare(Op op, C p, C q) {
  switch (op) {
    case Op::eq: return p == q;
    case Op::ne: return p != q;
    case Op::lt: return p < q;
    case Op::le: return p <= q;
    case Op::gt: return p > q;
    case Op::ge: return p >= q;
    default: return false;
  }
}

template <class T> __global__ void elementwise_kernel(ElementwiseArgs args) {
  using C = typename Compute<T>::type;
  const T* a = static_cast<const T*>(args.a);
  const T* b = static_cast<const T*>(args.b);
  const T* c = static_cast<const T*>(args.c);
  const int64_t sa = args.a_scalar ? 0 : 1, sb = args.b_scalar ? 0 : 1, sc = args.c_scalar ? 0 : 1;
  const Op op = args.op;
  FERRY_GRID_LOOP(i, args.n) {
    if (op >= Op::eq && op <= Op::ge) {
      static_cast<uint8_t*>(args.y)[i] = compare<C>(op, load(a, i * sa), load(b, i * sb));
    } else if (op == Op::select) {
      // a is the bool predicate; b and c are the branches (T).
      const bool p = static_cast<const uint8_t*>(args.a)[i * sa] != 0;
      static_cast<T*>(args.y)[i] = p ? b[i * sb] : c[i * sc];
    } else if (op == Op::clamp) {
      // clamp(lo, x, hi) = min(max(x, lo), hi), NaN propagating.
      const C l = load(a, i * sa), v = load(b, i * sb), h = load(c, i * sc);
      const C m = ((v > l) | (v != v)) ? v : l;
      store(static_cast<T*>(args.y), i, ((m < h) | (m != m)) ? m : h);
    } else if constexpr (std::is_same_v<T, uint8_t>) {
      static_cast<uint8_t*>(args.y)[i] = bool_op(op, a[i * sa], op == Op::logical_not ? 0 : b[i * sb]);
    } else if constexpr (std::is_same_v<T, int32_t>) {
      static_cast<int32_t*>(args.y)[i] =
          op < Op::add ? unary_int(op, a[i * sa]) : binary_int(op, a[i * sa], b[i * sb]);
    } else {
      const C r = op < Op::add ? unary_float<C>(op, load(a, i * sa)) : binary_float<C>(op, load(a, i * sa), load(b, i * sb));
      store(static_cast<T*>(args.y), i, r);
    }
  }
}

__global__ void convert_kernel(Dt from, Dt to, const void* x, void* y, int64_t n) {
  const bool from_float = from == Dt::f32 || from == Dt::f64 || from == Dt::f16 || from == Dt::bf16;
  FERRY_GRID_LOOP(i, n) store_any(to, y, i, load_any(from, x, i), from_float);
}

__global__ void fill_kernel(Dt t, double value, void* y, int64_t n) {
  FERRY_GRID_LOOP(i, n) store_any(t, y, i, value, true);
}

__global__ void iota_kernel(Dt t, void* y, int64_t n, int64_t inner, int64_t size) {
  FERRY_GRID_LOOP(i, n) store_any(t, y, i, static_cast<double>((i / inner) % size), false);
}

}  // namespace

void launch_elementwise(const ElementwiseArgs& args, void* stream) {
  if (args.n == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  visit(args.dtype, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    elementwise_kernel<T><<<blocks_for(args.n), kThreads, 0, s>>>(args);
  });
}

void launch_convert(Dt from, Dt to, const void* x, void* y, int64_t n, void* stream) {
  if (n) convert_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(from, to, x, y, n);
}

void launch_fill(Dt dtype, double value, void* y, int64_t n, void* stream) {
  if (n) fill_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(dtype, value, y, n);
}

void launch_iota(Dt dtype, void* y, int64_t n, int64_t inner, int64_t size, void* stream) {
  if (n) iota_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(dtype, y, n, inner, size);
}

const char* last_launch_error() {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? "" : cudaGetErrorString(e);
}

}  // namespace ferry::runtime::cuda
