"""Converter rules for jax.lax's first-order primitives: elementwise, comparisons, conversions,
dot_general, reductions, shapes, indexing, gather and scatter-add.

Primitives ferry has no operation for are composed from ferry operations exactly as XLA expands
them where that is exact (integer_pow by repeated squaring in XLA's order, square, pad, rev,
is_finite, round to nearest even, exp2, tan, nextafter); products along an axis (cumprod,
reduce_prod, cumlogsumexp) through the parallel prefix JAX differentiates them by, which rounds
in another order, as ferry's sums do; uint32 comparisons, divisions and conversions read the
equation's avals. What cannot be composed exactly has no rule (UNIMPLEMENTED).
"""
import functools
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ferry import _ferry as F
from ferry._errors import unimplemented
from ferry.jax._interpreter import (
    call_closed, ferry_dtype, is_key, is_unsigned, key_shape, physical_shape, rule, scalar, where)


def _unary(fn):
    return lambda ctx, eqn, x: fn(x)


for _name, _fn in {
        "neg": F.neg, "exp": F.exp, "log": F.log, "sin": F.sin, "cos": F.cos, "tanh": F.tanh,
        "logistic": F.logistic, "sqrt": F.sqrt, "rsqrt": F.rsqrt, "sign": F.sign, "erf": F.erf,
        "erf_inv": F.erf_inv, "log1p": F.log1p, "expm1": F.expm1, "floor": F.floor, "ceil": F.ceil,
        "atan": F.atan, "asin": F.asin, "acos": F.acos, "sinh": F.sinh, "cosh": F.cosh, "asinh": F.asinh,
        "acosh": F.acosh, "atanh": F.atanh, "cbrt": F.cbrt,
        "not": F.logical_not, "stop_gradient": F.stop_gradient}.items():
    rule(_name)(_unary(_fn))


@rule("abs")
def _abs(ctx, eqn, x):
    if is_unsigned(eqn.invars[0].aval):
        return x
    return F.abs(x)


@rule("copy", "copy_p", "optimization_barrier", "sharding_constraint", "mesh_cast", "reshard",
      "core_call_identity")
def _identity(ctx, eqn, *xs):
    return list(xs) if eqn.primitive.multiple_results else xs[0]


def _binary(fn):
    return lambda ctx, eqn, a, b: fn(a, b)


for _name, _fn in {
        "add": F.add, "add_any": F.add, "sub": F.sub, "mul": F.mul,
        "and": F.logical_and, "or": F.logical_or, "xor": F.logical_xor, "shift_left": F.shift_left,
        "shift_right_logical": F.shift_right_logical, "eq": F.eq, "ne": F.ne}.items():
    rule(_name)(_binary(_fn))


# uint32 values are int32 bit patterns: ordering them flips the sign bit first.
def _flip(x):
    return F.logical_xor(x, scalar(-2 ** 31, "i32"))


def _ordered(fn):
    def convert(ctx, eqn, a, b):
        if is_unsigned(eqn.invars[0].aval):
            return fn(_flip(a), _flip(b))
        return fn(a, b)
    return convert


for _name, _fn in {"lt": F.lt, "le": F.le, "gt": F.gt, "ge": F.ge}.items():
    rule(_name)(_ordered(_fn))


def _total_order_key(eqn, x):
    """x as an i32 whose signed order is IEEE's total order on floats (-NaN < -inf < ... < -0 < +0
    < ... < inf < NaN: the bits, every bit but the sign flipped where it is set); integers as they
    order. f16 and bf16 widen to f32 exactly first; f64 has no i64 to go to."""
    aval = eqn.invars[0].aval
    if is_unsigned(aval):
        return _flip(x)
    if x.dtype == "bool":
        return F.convert(x, "i32")
    if x.dtype == "i32":
        return x
    if x.dtype == "f64":
        raise unimplemented(f"{eqn.primitive.name} of float64 at {where(eqn)} (ferry has no 64-bit integers)")
    bits = F.bitcast_convert_type(x if x.dtype == "f32" else F.convert(x, "f32"), "i32")
    flip = F.select_n(F.lt(bits, scalar(0, "i32")), [scalar(0, "i32"), scalar(0x7fffffff, "i32")])
    return F.logical_xor(bits, flip)


@rule("lt_to", "le_to")
def _total_order_compare(ctx, eqn, a, b):
    """lt_to / le_to: comparisons in the total order (jnp.searchsorted and jnp.interp use them)."""
    fn = F.lt if eqn.primitive.name == "lt_to" else F.le
    return fn(_total_order_key(eqn, a), _total_order_key(eqn, b))


@rule("max", "min")
def _max_min(ctx, eqn, a, b):
    fn = F.max if eqn.primitive.name == "max" else F.min
    if is_unsigned(eqn.invars[0].aval):
        return _flip(fn(_flip(a), _flip(b)))
    return fn(a, b)


def _u32_divmod(a, b):
    """Exact uint32 quotient and remainder (as int32 bits), in float64 with one correction step."""
    def wide(x):
        f = F.convert(x, "f64")
        return F.select_n(F.lt(x, scalar(0, "i32")), [f, F.add(f, scalar(2.0 ** 32, "f64"))])

    def narrow(f):  # [0, 2^32) -> int32 bits
        big = F.ge(f, scalar(2.0 ** 31, "f64"))
        return F.convert(F.select_n(big, [f, F.sub(f, scalar(2.0 ** 32, "f64"))]), "i32")

    fa, fb = wide(a), wide(b)
    q = F.floor(F.div(fa, fb))
    r = F.sub(fa, F.mul(q, fb))
    low = F.lt(r, scalar(0.0, "f64"))
    q = F.select_n(low, [q, F.sub(q, scalar(1.0, "f64"))])
    r = F.select_n(low, [r, F.add(r, fb)])
    high = F.ge(r, fb)
    q = F.select_n(high, [q, F.add(q, scalar(1.0, "f64"))])
    r = F.select_n(high, [r, F.sub(r, fb)])
    zero = F.eq(b, scalar(0, "i32"))  # XLA: x / 0 = all ones, x % 0 = x
    return (F.select_n(zero, [narrow(q), scalar(-1, "i32", ())]), F.select_n(zero, [narrow(r), a]))


@rule("div")
def _div(ctx, eqn, a, b):
    if is_unsigned(eqn.invars[0].aval):
        return _u32_divmod(a, b)[0]
    if ferry_dtype(eqn.invars[0].aval) == "i32":
        # XLA's integer division truncates toward zero: trunc(a / b) from the remainder.
        return F.convert(F.div(F.convert(F.sub(a, F.rem(a, b)), "f64"), F.convert(b, "f64")), "i32")
    return F.div(a, b)


@rule("platform_index")
def _platform_index(ctx, eqn):
    """lax.platform_dependent's choice (jnp.diagonal makes one): the branch for "cpu", else the
    default. The branches compute the same function (each is a lowering for its platforms), so the
    choice holds for every ferry backend."""
    platforms = eqn.params["platforms"]
    for i, names in enumerate(platforms):
        if names is not None and "cpu" in names:
            return scalar(i, "i32")
    for i, names in enumerate(platforms):
        if names is None:
            return scalar(i, "i32")
    raise unimplemented(f"platform_dependent with branches only for {platforms} at {where(eqn)}")


@rule("atan2")
def _atan2(ctx, eqn, a, b):
    return F.atan2(a, b)


@rule("rem")
def _rem(ctx, eqn, a, b):
    if is_unsigned(eqn.invars[0].aval):
        return _u32_divmod(a, b)[1]
    return F.rem(a, b)


@rule("shift_right_arithmetic")
def _shift_right_arithmetic(ctx, eqn, x, n):
    # The logical shift, with the vacated high bits set for negative x (all ones past 31, as XLA).
    logical = F.shift_right_logical(x, n)
    high = F.logical_not(F.shift_right_logical(scalar(-1, "i32"), n))
    return F.select_n(F.lt(x, scalar(0, "i32")), [logical, F.logical_or(logical, high)])


@rule("empty", "empty2")
def _empty(ctx, eqn, *xs):
    # Uninitialized storage JAX makes for values it overwrites: zeros.
    outs = []
    for v in eqn.outvars:
        shape = list(physical_shape(v.aval))
        outs.append(F.broadcast_in_dim(scalar(0, ferry_dtype(v.aval)), shape, []))
    return outs if eqn.primitive.multiple_results else outs[0]


@rule("pow")
def _pow(ctx, eqn, x, y):
    # lax.pow also takes an integer exponent (optax's bias correction b1 ** count).
    return F.pow(x, y if y.dtype == x.dtype else F.convert(y, x.dtype))


@rule("square")
def _square(ctx, eqn, x):
    return F.mul(x, x)


@rule("integer_pow")
def _integer_pow(ctx, eqn, x):
    # XLA's expansion, in its order of multiplications (binary exponentiation).
    y = eqn.params["y"]
    dtype = ferry_dtype(eqn.outvars[0].aval)
    if y == 0:
        return F.broadcast_in_dim(scalar(1, dtype), list(x.shape), [])
    reciprocal = y < 0
    y = -y if reciprocal else y
    acc = None
    while y > 0:
        if y & 1:
            acc = x if acc is None else F.mul(acc, x)
        y >>= 1
        if y > 0:
            x = F.mul(x, x)
    return F.div(scalar(1, dtype), acc) if reciprocal else acc


@rule("erfc")
def _erfc(ctx, eqn, x):
    # 1 - erf(x): exact to f32 rounding in absolute terms (jax.nn.gelu(approximate=False) uses it);
    # relative accuracy is lost where erfc(x) is below about 1e-4 (x > 2.8).
    return F.sub(scalar(1.0, x.dtype), F.erf(x))


@rule("exp2")
def _exp2(ctx, eqn, x):
    return F.exp(F.mul(x, scalar(math.log(2.0), x.dtype)))


@rule("tan")
def _tan(ctx, eqn, x):
    return F.div(F.sin(x), F.cos(x))


@rule("is_finite")
def _is_finite(ctx, eqn, x):
    return F.eq(F.sub(x, x), scalar(0.0, x.dtype))


@rule("nextafter")
def _nextafter(ctx, eqn, x, y):
    """lax.nextafter on f32 as XLA expands it, on the bits: toward y by one unit in the last place;
    x == y gives y; from zero the smallest subnormal with y's sign; NaN gives the canonical NaN.
    XLA's CPU compares x == y with subnormals as zero, so that is kept too (flax's initializers
    call it through jax.random.truncated_normal)."""
    if x.dtype != "f32":
        raise unimplemented(f"nextafter of {eqn.invars[0].aval.dtype} at {where(eqn)} (ferry steps float32 bits)")
    i32 = lambda v: scalar(v, "i32")
    xi, yi = F.bitcast_convert_type(x, "i32"), F.bitcast_convert_type(y, "i32")
    sign = i32(-2 ** 31)
    xabs, yabs = F.logical_and(xi, i32(0x7fffffff)), F.logical_and(yi, i32(0x7fffffff))
    subnormal_or_zero = lambda a: F.le(a, i32(0x007fffff))
    equal = F.logical_or(F.eq(x, y), F.logical_and(subnormal_or_zero(xabs), subnormal_or_zero(yabs)))
    to_sign = F.logical_and(yi, sign)
    from_zero = F.select_n(F.eq(yabs, i32(0)), [F.logical_or(to_sign, i32(1)), yi])
    away = F.logical_or(F.gt(xabs, yabs), F.ne(F.logical_and(xi, sign), to_sign))
    stepped = F.add(xi, F.select_n(away, [i32(1), i32(-1)]))
    bits = F.select_n(F.eq(xabs, i32(0)), [stepped, from_zero])
    bits = F.select_n(equal, [bits, yi])
    nan = F.logical_or(F.ne(x, x), F.ne(y, y))
    return F.select_n(nan, [F.bitcast_convert_type(bits, "f32"), scalar(float("nan"), "f32")])


@rule("round")
def _round(ctx, eqn, x):
    method = int(eqn.params.get("rounding_method", 0))
    if method == 0:  # AWAY_FROM_ZERO
        return F.round(x)
    # TO_NEAREST_EVEN: round half away from zero, then step back where a tie landed on an odd value.
    r = F.round(x)
    tie = F.eq(F.abs(F.sub(x, _trunc(x))), scalar(0.5, x.dtype))
    odd = F.ne(F.rem(r, scalar(2.0, x.dtype)), scalar(0.0, x.dtype))
    return F.select_n(F.logical_and(tie, odd), [r, F.sub(r, F.mul(F.sign(x), scalar(1.0, x.dtype)))])


def _trunc(x):
    return F.select_n(F.lt(x, scalar(0.0, x.dtype)), [F.floor(x), F.ceil(x)])


@rule("select_n")
def _select_n(ctx, eqn, which, *cases):
    aval = eqn.outvars[0].aval
    if is_key(aval):  # the key data has trailing dimensions the predicate lacks
        shape = list(physical_shape(aval))
        which = F.broadcast_in_dim(which, shape, list(range(len(which.shape))))
    return F.select_n(which, list(cases))


@rule("clamp")
def _clamp(ctx, eqn, lo, x, hi):
    if is_unsigned(eqn.invars[1].aval):
        return _flip(F.clamp(_flip(lo), _flip(x), _flip(hi)))
    return F.clamp(lo, x, hi)


@rule("convert_element_type")
def _convert(ctx, eqn, x):
    src, dst = eqn.invars[0].aval, eqn.outvars[0].aval
    fs, fd = ferry_dtype(src), ferry_dtype(dst)
    if is_unsigned(src) and fd in ("f32", "f64", "f16", "bf16"):
        wide = F.convert(x, "f64")
        wide = F.select_n(F.lt(x, scalar(0, "i32")), [wide, F.add(wide, scalar(2.0 ** 32, "f64"))])
        return F.convert(wide, fd)
    if is_unsigned(dst) and fs != "i32":
        if fs == "bool":
            return F.convert(x, "i32")
        raise unimplemented(f"convert_element_type from {src.dtype} to uint32 at {where(eqn)}")
    if fs == fd:
        return x
    return F.convert(x, fd)


@rule("bitcast_convert_type")
def _bitcast(ctx, eqn, x):
    fd = ferry_dtype(eqn.outvars[0].aval)
    return x if fd == x.dtype else F.bitcast_convert_type(x, fd)


@rule("reduce_precision")
def _reduce_precision(ctx, eqn, x):
    bits = (eqn.params["exponent_bits"], eqn.params["mantissa_bits"])
    own = {"f32": (8, 23), "f64": (11, 52), "f16": (5, 10), "bf16": (8, 7)}[x.dtype]
    if bits == own or (bits[0] >= own[0] and bits[1] >= own[1]):
        return x
    narrow = {(8, 7): "bf16", (5, 10): "f16", (8, 23): "f32"}.get(bits)
    if narrow is None:
        raise unimplemented(f"reduce_precision to exponent_bits={bits[0]}, mantissa_bits={bits[1]} "
                            f"at {where(eqn)} (ferry rounds to bf16, f16 and f32 only)")
    return F.convert(F.convert(x, narrow), x.dtype)


# Linear algebra.

@rule("dot_general")
def _dot_general(ctx, eqn, lhs, rhs):
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    out = ferry_dtype(eqn.outvars[0].aval)
    if out == "i32" or lhs.dtype in ("i32", "bool"):
        raise unimplemented(f"dot_general of integers at {where(eqn)} (ferry multiplies floats)")
    widths = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8}
    compute = out if widths[out] >= max(widths[lhs.dtype], widths[rhs.dtype]) else lhs.dtype
    if lhs.dtype != compute:
        lhs = F.convert(lhs, compute)
    if rhs.dtype != compute:
        rhs = F.convert(rhs, compute)
    y = F.dot_general(lhs, rhs, list(lc), list(rc), list(lb), list(rb))
    return y if y.dtype == out else F.convert(y, out)


# Reductions.

def _as_i32(x):
    return F.convert(x, "i32") if x.dtype == "bool" else x


@rule("reduce_sum")
def _reduce_sum(ctx, eqn, x):
    return F.reduce_sum(x, list(eqn.params["axes"]))


@rule("reduce_max", "reduce_min")
def _reduce_max_min(ctx, eqn, x):
    axes = list(eqn.params["axes"])
    fn = F.reduce_max if eqn.primitive.name == "reduce_max" else F.reduce_min
    if is_unsigned(eqn.invars[0].aval):
        return _flip(fn(_flip(x), axes))
    if x.dtype == "bool":
        return F.ne(fn(_as_i32(x), axes), scalar(0, "i32"))
    return fn(x, axes)


@rule("reduce_or", "reduce_and")
def _reduce_logical(ctx, eqn, x):
    axes = list(eqn.params["axes"])
    if x.dtype != "bool":
        raise unimplemented(f"{eqn.primitive.name} of {x.dtype} at {where(eqn)} (ferry reduces bools)")
    fn = F.reduce_max if eqn.primitive.name == "reduce_or" else F.reduce_min
    return F.ne(fn(_as_i32(x), axes), scalar(0, "i32"))


@rule("argmax", "argmin")
def _argmax(ctx, eqn, x):
    (axis,) = eqn.params["axes"]
    if ferry_dtype(eqn.outvars[0].aval) != "i32" or is_unsigned(eqn.outvars[0].aval):
        raise unimplemented(f"{eqn.primitive.name} with index_dtype {eqn.params['index_dtype']} at {where(eqn)}")
    if is_unsigned(eqn.invars[0].aval):
        x = _flip(x)
    return (F.argmax if eqn.primitive.name == "argmax" else F.argmin)(x, axis)


@rule("cumsum", "cummax", "cummin")
def _cumulative(ctx, eqn, x):
    fn = {"cumsum": F.cumsum, "cummax": F.cummax, "cummin": F.cummin}[eqn.primitive.name]
    if is_unsigned(eqn.invars[0].aval) and eqn.primitive.name != "cumsum":
        return _flip(fn(_flip(x), eqn.params["axis"], eqn.params["reverse"]))
    return fn(x, eqn.params["axis"], eqn.params["reverse"])


def _sort_key(eqn, i, x):
    """x as a key whose i32 order is JAX's: uint32 bits with the sign bit flipped."""
    if is_key(eqn.invars[i].aval):
        raise unimplemented(f"{eqn.primitive.name} of PRNG keys at {where(eqn)}")
    return _flip(x) if is_unsigned(eqn.invars[i].aval) else x


@rule("sort")
def _sort(ctx, eqn, *operands):
    """lax.sort: the positions that order the keys (stable, in JAX's order), lexicographic over
    num_keys keys by stable sorts from the last key to the first, then every operand taken along them."""
    dim = eqn.params["dimension"]
    keys = [_sort_key(eqn, i, x) for i, x in enumerate(operands[:eqn.params["num_keys"]])]
    order = F.argsort(keys[-1], dim, False, False)
    for key in reversed(keys[:-1]):
        moved = F.argsort(F.take_along_axis(key, order, dim, "clip"), dim, False, False)
        order = F.take_along_axis(order, moved, dim, "clip")
    return [F.take_along_axis(x, order, dim, "clip") for x in operands]


@rule("top_k")
def _top_k(ctx, eqn, x):
    """lax.top_k: the first k of a stable descending order in IEEE's total order, as XLA's TopK
    compares (NaN largest, -NaN smallest, +0 above -0; equal values: the lower position first)."""
    axis = eqn.params.get("axis", -1)
    rank = len(eqn.invars[0].aval.shape)
    axis = axis + rank if axis < 0 else axis
    k = eqn.params["k"]
    order = F.argsort(_sort_key(eqn, 0, x), axis, True, True)
    limit = list(eqn.invars[0].aval.shape)
    limit[axis] = k
    positions = F.slice(order, [0] * rank, limit, [1] * rank)
    return [F.take_along_axis(x, positions, axis, "clip"), positions]


def _by_associative_scan(ctx, eqn, x, combine, axis, reverse=False):
    """lax.associative_scan(combine) along axis of x (of the equation's operand dtype), converted
    from the jaxpr JAX makes of it: the parallel prefix that JAX itself differentiates these
    reductions through, so ferry's gradient is that composition's (exact where x has zeros, which a
    division would not be)."""
    fn = functools.partial(lax.associative_scan, combine, axis=axis, reverse=reverse)
    closed = jax.make_jaxpr(fn)(jax.ShapeDtypeStruct(tuple(x.shape), eqn.invars[0].aval.dtype))
    (out,) = call_closed(ctx, closed, [x], eqn)
    return out


@rule("cumprod", "cumlogsumexp")
def _cumulative_by_scan(ctx, eqn, x):
    """XLA's CPU multiplies each prefix in order; the parallel prefix here rounds in another order
    (well within the tolerances against jax.jit)."""
    combine = lax.mul if eqn.primitive.name == "cumprod" else jnp.logaddexp
    return _by_associative_scan(ctx, eqn, x, combine, eqn.params["axis"], eqn.params["reverse"])


@rule("reduce_prod")
def _reduce_prod(ctx, eqn, x):
    """The product over the axes: the reduced axes moved last and merged, the parallel prefix
    product along them, its last element."""
    shape = list(eqn.invars[0].aval.shape)
    axes = sorted(eqn.params["axes"])
    if not axes:
        return x
    kept = [d for d in range(len(shape)) if d not in axes]
    n = int(np.prod([shape[d] for d in axes]))
    out_shape = [shape[d] for d in kept]
    if n == 0:
        return scalar(1, x.dtype, out_shape)
    moved = F.reshape(F.transpose(x, kept + axes), out_shape + [n])
    prefix = _by_associative_scan(ctx, eqn, moved, lax.mul, len(out_shape))
    last = F.slice(prefix, [0] * len(out_shape) + [n - 1], out_shape + [n], [1] * (len(out_shape) + 1))
    return F.reshape(last, out_shape)


# Shapes. Key arrays carry their key data's trailing dimensions through every shape operation.

def _trailing(eqn, i=0):
    aval = eqn.invars[i].aval
    return key_shape(aval) if is_key(aval) else ()


@rule("broadcast_in_dim")
def _broadcast_in_dim(ctx, eqn, x, *dyn):
    if dyn:
        raise unimplemented(f"broadcast_in_dim with dynamic shapes at {where(eqn)}")
    extra = _trailing(eqn)
    shape = list(eqn.params["shape"]) + list(extra)
    dims = list(eqn.params["broadcast_dimensions"])
    dims += [len(eqn.params["shape"]) + i for i in range(len(extra))]
    if tuple(x.shape) == tuple(shape):
        return x
    return F.broadcast_in_dim(x, shape, dims)


@rule("tile")
def _tile(ctx, eqn, x):
    """lax.tile: x broadcast to [r0, s0, r1, s1, ...] (each axis repeated reps[i] times in front of
    it), then each pair merged; key data's trailing dimensions ride along untiled."""
    reps = list(eqn.params["reps"])
    shape = list(eqn.invars[0].aval.shape)
    extra = list(_trailing(eqn))
    wide, dims = [], []
    for i, (r, n) in enumerate(zip(reps, shape)):
        wide += [r, n]
        dims.append(2 * i + 1)
    wide += extra
    dims += [2 * len(shape) + i for i in range(len(extra))]
    merged = [r * n for r, n in zip(reps, shape)] + extra
    return F.reshape(F.broadcast_in_dim(x, wide, dims), merged)


@rule("reshape", "squeeze", "expand_dims")
def _reshape(ctx, eqn, x, *dyn):
    if dyn:
        raise unimplemented(f"{eqn.primitive.name} with dynamic shapes at {where(eqn)}")
    dims = eqn.params.get("dimensions") if eqn.primitive.name == "reshape" else None
    if dims is not None:
        x = F.transpose(x, list(dims) + list(range(len(dims), len(x.shape))))
    shape = list(physical_shape(eqn.outvars[0].aval))
    return x if tuple(x.shape) == tuple(shape) else F.reshape(x, shape)


@rule("transpose")
def _transpose(ctx, eqn, x):
    perm = list(eqn.params["permutation"])
    perm += list(range(len(perm), len(x.shape)))
    return x if perm == sorted(perm) else F.transpose(x, perm)


@rule("slice")
def _slice(ctx, eqn, x):
    extra = _trailing(eqn)
    start = list(eqn.params["start_indices"]) + [0] * len(extra)
    limit = list(eqn.params["limit_indices"]) + list(extra)
    strides = eqn.params.get("strides")
    strides = (list(strides) if strides is not None else [1] * len(eqn.params["start_indices"])) + [1] * len(extra)
    return F.slice(x, start, limit, strides)


@rule("split")
def _split(ctx, eqn, x):
    axis = eqn.params["axis"]
    outs, at = [], 0
    for size in eqn.params["sizes"]:
        start = [0] * len(x.shape)
        limit = list(x.shape)
        start[axis], limit[axis] = at, at + size
        outs.append(F.slice(x, start, limit, [1] * len(x.shape)))
        at += size
    return outs


@rule("stack")
def _stack(ctx, eqn, *xs):
    axis = eqn.params["axis"]
    parts = []
    for x in xs:
        shape = list(x.shape)
        parts.append(F.reshape(x, shape[:axis] + [1] + shape[axis:]))
    return F.concatenate(parts, axis)


@rule("unstack")
def _unstack(ctx, eqn, x):
    axis = eqn.params["axis"]
    shape = list(x.shape)
    outs = []
    for i in range(shape[axis]):
        start, limit = [0] * len(shape), list(shape)
        start[axis], limit[axis] = i, i + 1
        outs.append(F.reshape(F.slice(x, start, limit, [1] * len(shape)), shape[:axis] + shape[axis + 1:]))
    return outs


@rule("concatenate")
def _concatenate(ctx, eqn, *xs):
    return F.concatenate(list(xs), eqn.params["dimension"])


@rule("pad")
def _pad(ctx, eqn, x, value):
    return _pad_tensor(x, value, list(eqn.params["padding_config"]))


def _pad_tensor(x, value, config):
    """XLA's pad: interior padding first, then edge padding (negative edges slice)."""
    dtype = x.dtype
    for axis, (lo, hi, interior) in enumerate(config):
        if interior > 0 and x.shape[axis] > 1:
            n = x.shape[axis]
            shape = list(x.shape)
            fill_shape = shape[:axis + 1] + [interior] + shape[axis + 1:]
            expanded = F.reshape(x, shape[:axis + 1] + [1] + shape[axis + 1:])
            fill = F.broadcast_in_dim(value, fill_shape, [])
            woven = F.concatenate([expanded, fill], axis + 1)
            flat = shape[:axis] + [n * (1 + interior)] + shape[axis + 1:]
            x = F.reshape(woven, flat)
            start = [0] * len(flat)
            limit = list(flat)
            limit[axis] = n + (n - 1) * interior
            x = F.slice(x, start, limit, [1] * len(flat))
        for amount, before in ((lo, True), (hi, False)):
            if amount > 0:
                shape = list(x.shape)
                shape[axis] = amount
                fill = F.broadcast_in_dim(value, shape, [])
                x = F.concatenate([fill, x] if before else [x, fill], axis)
            elif amount < 0:
                start = [0] * len(x.shape)
                limit = list(x.shape)
                if before:
                    start[axis] = -amount
                else:
                    limit[axis] += amount
                x = F.slice(x, start, limit, [1] * len(x.shape))
    del dtype
    return x


def _window_count(size, extent, dilation, stride):
    """How many windows of `extent` elements `dilation` apart fit in `size`, `stride` apart."""
    return max(0, (size - (extent - 1) * dilation - 1) // stride + 1)


def _strided(x, start, counts, steps):
    """x's elements from `start` on, `counts[d]` of them `steps[d]` apart along each dimension d."""
    limit = [s + (c - 1) * st + 1 for s, c, st in zip(start, counts, steps)]
    return F.slice(x, list(start), limit, list(steps))


@rule("conv_general_dilated")
def _conv(ctx, eqn, lhs, rhs):
    """conv_general_dilated as XLA defines it, composed: the input dilated (lhs_dilation) and
    padded by pad's rule, channels last, then matrix products summed in order. Where the kernel
    has fewer positions than the result, one product per kernel position (a strided window of
    the input times that position's [I, O] weights, all into one [N, P, O] sum); else one product
    per result position (its whole window times all the weights), as for the weight gradients
    jax.grad makes, whose "kernel" is a whole activation. Feature and batch groups batch the
    products. Half types accumulate in float32 and round once, as XLA's convolution does;
    ferry.jax.grad differentiates the composition, and jax.grad's convolutions convert the same way."""
    p = eqn.params
    dn = p["dimension_numbers"]
    lhs_spec, rhs_spec, out_spec = list(dn.lhs_spec), list(dn.rhs_spec), list(dn.out_spec)
    nd = len(lhs_spec) - 2
    groups, batch_groups = int(p["feature_group_count"]), int(p["batch_group_count"])
    out = ferry_dtype(eqn.outvars[0].aval)
    if out in ("i32", "bool") or lhs.dtype in ("i32", "bool"):
        raise unimplemented(f"conv_general_dilated of integers at {where(eqn)} (ferry multiplies floats)")
    if groups > 1 and batch_groups > 1:
        raise unimplemented(f"conv_general_dilated with both group counts above 1 at {where(eqn)}")
    compute = "f64" if "f64" in (lhs.dtype, rhs.dtype, out) else "f32"
    # Channels last: x [N, spatial..., C], w [kernel..., I, O] (NHWC and HWIO need no copy).
    x = F.transpose(lhs if lhs.dtype == compute else F.convert(lhs, compute),
                    [lhs_spec[0]] + lhs_spec[2:] + [lhs_spec[1]])
    w = F.transpose(rhs if rhs.dtype == compute else F.convert(rhs, compute), rhs_spec[2:] + [rhs_spec[1], rhs_spec[0]])
    lhs_dilation = list(p["lhs_dilation"] or [1] * nd)
    rhs_dilation = list(p["rhs_dilation"] or [1] * nd)
    strides = list(p["window_strides"])
    config = [(0, 0, 0)] + [(lo, hi, d - 1) for (lo, hi), d in zip(p["padding"], lhs_dilation)] + [(0, 0, 0)]
    x = _pad_tensor(x, scalar(0, compute), config)
    n, spatial, c = x.shape[0], list(x.shape[1:-1]), x.shape[-1]
    kernel, i, o = list(w.shape[:-2]), w.shape[-2], w.shape[-1]
    out_spatial = [_window_count(spatial[d], kernel[d], rhs_dilation[d], strides[d]) for d in range(nd)]
    n_out = n // batch_groups
    positions = int(np.prod(out_spatial)) if nd else 1
    taps = int(np.prod(kernel)) if nd else 1
    if positions == 0 or taps == 0 or c == 0:
        acc = F.broadcast_in_dim(scalar(0, compute), [n_out, positions, o], [])
    elif taps <= positions:
        acc = None
        for k in itertools.product(*[range(size) for size in kernel]):
            start = [0] + [k[d] * rhs_dilation[d] for d in range(nd)] + [0]
            window = F.reshape(_strided(x, start, [n] + out_spatial + [c], [1] + strides + [1]), [n, positions, c])
            weights = F.reshape(F.slice(w, list(k) + [0, 0], [j + 1 for j in k] + [i, o], [1] * (nd + 2)), [i, o])
            term = _conv_tap(window, weights, groups, batch_groups)
            acc = term if acc is None else F.add(acc, term)
    else:
        weights = F.reshape(w, [taps, i, o])
        parts = []
        for q in itertools.product(*[range(size) for size in out_spatial]):
            start = [0] + [q[d] * strides[d] for d in range(nd)] + [0]
            window = F.reshape(_strided(x, start, [n] + kernel + [c], [1] + rhs_dilation + [1]), [n, taps, c])
            parts.append(F.reshape(_conv_position(window, weights, groups, batch_groups), [n_out, 1, o]))
        acc = parts[0] if len(parts) == 1 else F.concatenate(parts, 1)
    y = F.reshape(acc, [n_out] + out_spatial + [o])  # [batch, spatial..., feature]
    perm = [0] * (nd + 2)
    perm[out_spec[0]], perm[out_spec[1]] = 0, nd + 1
    for d in range(nd):
        perm[out_spec[2 + d]] = 1 + d
    y = F.transpose(y, perm)
    return y if y.dtype == out else F.convert(y, out)


def _conv_tap(window, weights, groups, batch_groups):
    """One kernel position: window [N, P, C] times weights [I, O], as [N / batch_groups, P, O]."""
    n, positions, c = window.shape
    i, o = weights.shape
    if groups == 1 and batch_groups == 1:
        return F.dot_general(window, weights, [2], [0], [], [])
    if groups > 1:  # input features in `groups` blocks, each with its block of output features
        y = F.dot_general(F.reshape(window, [n, positions, groups, c // groups]),
                          F.reshape(weights, [i, groups, o // groups]), [3], [0], [2], [1])  # [G, N, P, O/G]
        return F.reshape(F.transpose(y, [1, 2, 0, 3]), [n, positions, o])
    # the batch in `batch_groups` blocks, each with its block of output features
    y = F.dot_general(F.reshape(window, [batch_groups, n // batch_groups, positions, c]),
                      F.reshape(weights, [i, batch_groups, o // batch_groups]), [3], [0], [0], [1])  # [B, N/B, P, O/B]
    return F.reshape(F.transpose(y, [1, 2, 0, 3]), [n // batch_groups, positions, o])


def _conv_position(window, weights, groups, batch_groups):
    """One result position: window [N, T, C] (T kernel positions) times weights [T, I, O], as
    [N / batch_groups, O]."""
    n, taps, c = window.shape
    _, i, o = weights.shape
    if groups == 1 and batch_groups == 1:
        return F.dot_general(window, weights, [1, 2], [0, 1], [], [])
    if groups > 1:
        y = F.dot_general(F.reshape(window, [n, taps, groups, c // groups]),
                          F.reshape(weights, [taps, i, groups, o // groups]), [1, 3], [0, 1], [2], [2])  # [G, N, O/G]
        return F.reshape(F.transpose(y, [1, 0, 2]), [n, o])
    y = F.dot_general(F.reshape(window, [batch_groups, n // batch_groups, taps, c]),
                      F.reshape(weights, [taps, i, batch_groups, o // batch_groups]), [2, 3], [0, 1], [0], [2])
    return F.reshape(F.transpose(y, [1, 0, 2]), [n // batch_groups, o])  # from [B, N/B, O/B]


def _window_init(name, dtype):
    """The value reduce_window pads with and starts from: 0 for sums, -inf / +inf for max / min
    (the i32 extremes for integers)."""
    if name.endswith("sum"):
        return scalar(0, dtype)
    lowest = name.endswith("max")
    if dtype == "i32":
        return scalar(-2 ** 31 if lowest else 2 ** 31 - 1, "i32")
    return scalar(float("-inf") if lowest else float("inf"), dtype)


def _window_combine(name, acc, value):
    """acc combined with the next window element. max / min keep the earlier element unless the
    later one is strictly beyond it (or NaN where acc is not), through select, so that the
    gradient goes to the first extreme in window order alone, as jax.grad's select_and_scatter_add
    sends it; the value is max / min's, NaN included."""
    if name == "reduce_window_sum":
        return F.add(acc, value)
    beyond = F.gt(value, acc) if name == "reduce_window_max" else F.lt(value, acc)
    nan_first = F.logical_and(F.ne(value, value), F.eq(acc, acc))
    return F.select_n(F.logical_or(beyond, nan_first), [acc, value])


@rule("reduce_window_sum", "reduce_window_max", "reduce_window_min")
def _reduce_window(ctx, eqn, x):
    """reduce_window (pooling) as XLA defines it, composed: x dilated and padded with the
    reduction's initial value, then either one strided window per window position combined in
    window order (_window_combine; sums in XLA's order), or, where the window has more positions
    than the result, one reduction per result position (global pooling)."""
    name = eqn.primitive.name
    p = eqn.params
    if x.dtype == "bool":
        raise unimplemented(f"{name} of bool at {where(eqn)}")
    rank = len(x.shape)
    window, strides = list(p["window_dimensions"]), list(p["window_strides"])
    dilation = list(p["window_dilation"])
    init = _window_init(name, x.dtype)
    config = [(lo, hi, b - 1) for (lo, hi), b in zip(p["padding"], p["base_dilation"])]
    x = _pad_tensor(x, init, config)
    shape = list(x.shape)
    out_shape = [_window_count(shape[d], window[d], dilation[d], strides[d]) for d in range(rank)]
    taps, positions = int(np.prod(window)), int(np.prod(out_shape))
    if taps == 0 or positions == 0:
        return F.broadcast_in_dim(init, out_shape, [])
    if taps <= positions:
        acc = None
        for k in itertools.product(*[range(w) for w in window]):
            part = _strided(x, [k[d] * dilation[d] for d in range(rank)], out_shape, strides)
            acc = part if acc is None else _window_combine(name, acc, part)
        return acc
    parts = []
    for q in itertools.product(*[range(n) for n in out_shape]):
        flat = F.reshape(_strided(x, [q[d] * strides[d] for d in range(rank)], window, dilation), [taps])
        if name == "reduce_window_sum":
            parts.append(F.reshape(F.reduce_sum(flat, [0]), [1]))
        else:  # the first extreme (NaN first), taken: its gradient goes there alone, as JAX's does
            at = (F.argmax if name == "reduce_window_max" else F.argmin)(flat, 0)
            parts.append(F.take_along_axis(flat, F.reshape(at, [1]), 0, "clip"))
    flat = parts[0] if len(parts) == 1 else F.concatenate(parts, 0)
    return F.reshape(flat, out_shape)


@rule("select_and_scatter_add")
def _select_and_scatter_add(ctx, eqn, source, operand):
    """The gradient jax.grad makes of max / min pooling: in each window the first element (in
    window order) that select_prim (ge: the maximum, le: the minimum) keeps over every later one
    receives that window's source value; windows that overlap add. Padding is never selected."""
    p = eqn.params
    keep = {"ge": F.ge, "le": F.le}.get(p["select_prim"].name)
    if keep is None:
        raise unimplemented(f"select_and_scatter_add with select_prim {p['select_prim']} at {where(eqn)}")
    rank = len(operand.shape)
    window, strides = list(p["window_dimensions"]), list(p["window_strides"])
    pads = [tuple(pair) for pair in p["padding"]]
    if any(lo < 0 or hi < 0 for lo, hi in pads):
        raise unimplemented(f"select_and_scatter_add with negative padding at {where(eqn)}")
    out_shape = list(source.shape)
    x = _pad_tensor(operand, scalar(0, operand.dtype), [(lo, hi, 0) for lo, hi in pads])
    inside = _pad_tensor(F.broadcast_in_dim(scalar(1, "bool"), list(operand.shape), []), scalar(0, "bool"),
                         [(lo, hi, 0) for lo, hi in pads])
    padded = list(x.shape)
    taps = list(itertools.product(*[range(w) for w in window]))
    best = chosen = found = None
    for t, k in enumerate(taps):
        value, valid = _strided(x, k, out_shape, strides), _strided(inside, k, out_shape, strides)
        take = valid if best is None else F.logical_and(valid, F.logical_or(
            F.logical_not(found), F.logical_not(keep(best, value))))
        tap = F.broadcast_in_dim(scalar(t, "i32"), out_shape, [])
        best = value if best is None else F.select_n(take, [best, value])
        chosen = F.select_n(take, [F.broadcast_in_dim(scalar(-1, "i32"), out_shape, []), tap]) if chosen is None \
            else F.select_n(take, [chosen, tap])
        found = take if found is None else F.logical_or(found, take)
    zero = scalar(0, source.dtype)
    total = None
    for t, k in enumerate(taps):
        part = F.select_n(F.eq(chosen, scalar(t, "i32")), [F.broadcast_in_dim(zero, out_shape, []), source])
        config = [(k[d], padded[d] - k[d] - (out_shape[d] - 1) * strides[d] - 1, strides[d] - 1) for d in range(rank)]
        placed = _pad_tensor(part, zero, config)
        total = placed if total is None else F.add(total, placed)
    if total is None:
        return F.broadcast_in_dim(zero, list(operand.shape), [])
    return _pad_tensor(total, zero, [(-lo, -hi, 0) for lo, hi in pads])


def _take(x, indices, axis):
    """x's slices along `axis` at the i32 `indices` (a vector), as a gather."""
    n = indices.shape[0]
    rank = len(x.shape)
    sizes = list(x.shape)
    sizes[axis] = 1
    offset = [d for d in range(rank) if d != axis]
    # The indexed dimension is the output's one that is not an offset dimension: `axis` itself.
    return F.gather(x, F.reshape(indices, [n, 1]), offset, [axis], [axis], sizes, "clip")


@rule("rev")
def _rev(ctx, eqn, x):
    for axis in eqn.params["dimensions"]:
        n = x.shape[axis]
        idx = F.sub(scalar(n - 1, "i32"), F.iota("i32", [n], 0))
        x = _take(x, idx, axis)
    return x


@rule("iota")
def _iota(ctx, eqn):
    aval = eqn.outvars[0].aval
    return F.iota(ferry_dtype(aval), list(aval.shape), eqn.params["dimension"])


@rule("dynamic_slice")
def _dynamic_slice(ctx, eqn, x, *starts):
    extra = _trailing(eqn)
    starts = list(starts) + [scalar(0, "i32")] * len(extra)
    return F.dynamic_slice(x, [_index(s) for s in starts], list(eqn.params["slice_sizes"]) + list(extra))


@rule("dynamic_update_slice")
def _dynamic_update_slice(ctx, eqn, x, update, *starts):
    extra = _trailing(eqn)
    starts = list(starts) + [scalar(0, "i32")] * len(extra)
    return F.dynamic_update_slice(x, update, [_index(s) for s in starts])


def _index(t):
    return t if t.dtype == "i32" else F.convert(t, "i32")


_MODES = {"GatherScatterMode.CLIP": "clip", "GatherScatterMode.PROMISE_IN_BOUNDS": "clip",
          "GatherScatterMode.FILL_OR_DROP": "fill", "GatherScatterMode.ONE_HOT": None}


def _mode(eqn, default_fill=True):
    mode = _MODES.get(str(eqn.params.get("mode")))
    if mode is None:
        raise unimplemented(f"{eqn.primitive.name} with mode {eqn.params.get('mode')} at {where(eqn)}")
    fill = eqn.params.get("fill_value")
    if mode == "fill" and fill is not None:
        if fill == 0:
            return "fill_zero"
        aval = eqn.invars[0].aval
        default = np.nan if np.issubdtype(aval.dtype, np.inexact) else None
        if not (default is not None and np.isnan(fill)):
            raise unimplemented(f"{eqn.primitive.name} with fill_value={fill} at {where(eqn)} (ferry fills with "
                                "0 or with JAX's default)")
    return mode


def _batched_indices(indices, operand_batching, indices_batching):
    """Indices with one more component per batching dimension: that dimension's own position
    (an iota), so that a batched gather or scatter becomes a plain one."""
    if not operand_batching:
        return indices, []
    shape = list(indices.shape)
    comps = [indices]
    for d in indices_batching:
        comps.append(F.iota("i32", shape[:-1] + [1], d))
    return F.concatenate(comps, len(shape) - 1), list(operand_batching)


@rule("gather")
def _gather(ctx, eqn, operand, indices):
    dn = eqn.params["dimension_numbers"]
    mode = _mode(eqn)
    sizes = list(eqn.params["slice_sizes"])
    offset = list(dn.offset_dims)
    collapsed = list(dn.collapsed_slice_dims)
    start_map = list(dn.start_index_map)
    indices, extra_map = _batched_indices(_index(indices), tuple(dn.operand_batching_dims),
                                          tuple(dn.start_indices_batching_dims))
    start_map += extra_map
    collapsed = sorted(collapsed + extra_map)
    extra = _trailing(eqn)
    if extra:  # key data: one more offset dimension at the end of the output
        out_rank = len(eqn.outvars[0].aval.shape)
        offset += [out_rank + i for i in range(len(extra))]
        sizes += list(extra)
    return F.gather(operand, indices, offset, collapsed, start_map, sizes, mode)


@rule("scatter-add", "scatter_add", "scatter")
def _scatter(ctx, eqn, operand, indices, updates):
    """scatter-add adds each update into its window; scatter (x.at[i].set(v)) writes it over the
    window, the last index vector's update staying where windows overlap, as on XLA's CPU."""
    name = eqn.primitive.name
    dn = eqn.params["dimension_numbers"]
    mode = _mode(eqn)
    if mode == "fill_zero":
        mode = "fill"
    if eqn.params.get("update_consts"):
        raise unimplemented(f"{name} with update_consts at {where(eqn)}")
    if is_key(eqn.invars[0].aval) or (operand.dtype == "bool" and name != "scatter"):
        raise unimplemented(f"{name} of {eqn.invars[0].aval.dtype} at {where(eqn)}")
    indices, extra_map = _batched_indices(_index(indices), tuple(dn.operand_batching_dims),
                                          tuple(dn.scatter_indices_batching_dims))
    to_operand = list(dn.scatter_dims_to_operand_dims) + extra_map
    inserted = sorted(list(dn.inserted_window_dims) + extra_map)
    fn = F.scatter if name == "scatter" else F.scatter_add
    return fn(operand, indices, updates, list(dn.update_window_dims), inserted, to_operand, mode)


def iota_2x32(ctx, eqn):
    """iota_2x32_shape: each element's row-major position as two uint32 words (hi, lo)."""
    shape = list(eqn.params["shape"])
    total = int(np.prod(shape)) if shape else 1
    if total >= 2 ** 31:
        raise unimplemented(f"iota_2x32_shape of {total} elements at {where(eqn)}")
    lo = None
    stride = 1
    for d in reversed(range(len(shape))):
        term = F.iota("i32", shape, d)
        if stride != 1:
            term = F.mul(term, scalar(stride, "i32"))
        lo = term if lo is None else F.add(lo, term)
        stride *= shape[d]
    if lo is None:
        lo = scalar(0, "i32")
    hi = F.broadcast_in_dim(scalar(0, "i32"), shape, [])
    return [hi, lo]


rule("iota_2x32_shape")(iota_2x32)


@rule("threefry2x32")
def _threefry(ctx, eqn, k0, k1, x0, x1):
    shape = list(physical_shape(eqn.outvars[0].aval))

    def full(t):
        return t if list(t.shape) == shape else F.broadcast_in_dim(t, shape, list(range(len(shape) - len(t.shape),
                                                                                          len(shape))))
    y0, y1 = F.threefry2x32(k0, k1, full(x0), full(x1))
    return [y0, y1]
