"""Every converted primitive against jax.jit on random inputs: values, and gradients by ferry
(ferry.jax.grad) against JAX's (jax.grad)."""
import functools

import jax
import jax.ad_checkpoint
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import ferry.jax
from conftest import assert_trees_close

rng = np.random.default_rng(0)


def f32(*shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def i32(*shape, hi=5):
    return rng.integers(0, hi, shape).astype(np.int32)


# (name, function, arguments, differentiable)
CASES = [
    ("neg", lambda x: -x, [f32(3, 4)], True),
    ("exp", jnp.exp, [f32(3, 4)], True),
    ("log", jnp.log, [f32(3, 4, lo=0.1)], True),
    ("sin_cos_tan", lambda x: jnp.sin(x) + jnp.cos(x) + jnp.tan(x * 0.3), [f32(5)], True),
    ("tanh_logistic", lambda x: jnp.tanh(x) * jax.nn.sigmoid(x), [f32(4, 3)], True),
    ("sqrt_rsqrt", lambda x: jnp.sqrt(x) + lax.rsqrt(x), [f32(6, lo=0.5)], True),
    ("abs_sign", lambda x: jnp.abs(x) * jnp.sign(x) + jnp.abs(x), [f32(7)], True),
    ("erf_erfinv", lambda x: lax.erf(x) + lax.erf_inv(x * 0.4), [f32(8, lo=-1, hi=1)], True),
    ("inverse_trig", lambda x: jnp.arctan(x) + jnp.arcsin(x) + jnp.arccos(x) + jnp.arctanh(x), [f32(9, lo=-0.9, hi=0.9)], True),
    ("hyperbolic", lambda x: jnp.sinh(x) + jnp.cosh(x) + jnp.arcsinh(x) + jnp.arccosh(jnp.abs(x) + 1.5), [f32(9)], True),
    ("cbrt", lambda x: jnp.cbrt(x), [f32(9, lo=0.3)], True),
    ("diagonal", lambda x: jnp.diagonal(x) * 2 + jnp.trace(x) + jnp.diag(x)[::-1], [f32(5, 5)], True),
    ("atan2", lambda y, x: jnp.arctan2(y, x) + jnp.arctan2(y, -1.0), [f32(9), f32(9)], True),
    ("log1p_expm1", lambda x: jnp.log1p(x) + jnp.expm1(x), [f32(8, lo=0, hi=1)], True),
    ("floor_ceil_round", lambda x: jnp.floor(x) + jnp.ceil(x) + jnp.round(x) + lax.round(x),
     [np.array([0.5, 1.5, 2.5, -0.5, -1.5, 0.3, -2.7], np.float32)], False),
    ("exp2_square", lambda x: jnp.exp2(x) + jnp.square(x), [f32(5)], True),
    ("integer_pow", lambda x: x ** 2 + x ** 3 + x ** 5 - 1 / x ** 2, [f32(4, lo=0.5)], True),
    ("pow", lambda x, y: x ** y, [f32(4, lo=0.5), f32(4)], True),
    ("arith", lambda x, y: (x + y) * (x - y) / (y * y + 1.0), [f32(3, 3), f32(3, 3)], True),
    ("max_min", lambda x, y: jnp.maximum(x, y) + jnp.minimum(x, y * 2), [f32(5), f32(5)], True),
    ("rem", lambda x, y: lax.rem(x, y), [f32(5), f32(5, lo=0.5)], False),
    ("compare_select", lambda x, y: jnp.where(x > y, x, y * 2) + jnp.where(x <= 0.1, 1.0, x),
     [f32(6), f32(6)], True),
    ("select_n", lambda p, x, y, z: lax.select_n(p, x, y, z), [i32(5, hi=3), f32(5), f32(5), f32(5)], False),
    ("clamp", lambda x: jnp.clip(x, -0.5, 0.7), [f32(9)], True),
    ("convert", lambda x: x.astype(jnp.int32).astype(jnp.float32) + x.astype(jnp.bfloat16).astype(jnp.float32)
     + (x > 0).astype(jnp.float32), [f32(6)], False),
    ("bf16_math", lambda x: (x.astype(jnp.bfloat16) * 2).astype(jnp.float32), [f32(4)], True),
    ("int_ops", lambda a, b: (a * b + a // (b + 1) - a % (b + 1)) ^ (a & b) | (a << 1),
     [i32(6, hi=50), i32(6, hi=50)], False),
    ("logical", lambda x, y: jnp.logical_and(x > 0, y > 0) | jnp.logical_not(x > y), [f32(6), f32(6)], False),
    ("is_finite", lambda x: jnp.isfinite(x / (x - x[0])), [f32(4)], False),
    ("dot", lambda a, b: a @ b, [f32(4, 3), f32(3, 5)], True),
    ("dot_batch", lambda a, b: jnp.einsum("bij,bjk->bik", a, b), [f32(2, 4, 3), f32(2, 3, 5)], True),
    ("dot_bf16_f32", lambda a, b: lax.dot_general(a.astype(jnp.bfloat16), b.astype(jnp.bfloat16),
                                                  (([1], [0]), ([], [])), preferred_element_type=jnp.float32),
     [f32(4, 3), f32(3, 2)], True),
    ("reduce", lambda x: jnp.sum(x, 0) + jnp.max(x, 0) + jnp.min(x, 0) + jnp.mean(x, 0), [f32(4, 3)], True),
    ("reduce_all_any", lambda x: jnp.all(x > -1, 1).astype(jnp.float32) + jnp.any(x > 1, 1), [f32(4, 3)], False),
    ("argmax", lambda x: jnp.argmax(x, 1) + jnp.argmin(x, 0).sum(), [f32(4, 3)], False),
    ("tile", lambda x: jnp.tile(x, (2, 1, 3)) + jnp.tile(x, 3)[None], [f32(2, 4)], True),
    ("cumsum", lambda x: jnp.cumsum(x, 1) + lax.cummax(x, 0) + lax.cummin(x, 1, reverse=True), [f32(3, 4)], True),
    ("shapes", lambda x: jnp.transpose(x.reshape(2, 6), (1, 0))[None, :, :, None].squeeze(-1).sum(0),
     [f32(3, 4)], True),
    ("broadcast", lambda x, y: x[:, None] * y[None, :], [f32(3), f32(4)], True),
    ("slice_concat", lambda x: jnp.concatenate([x[1:3], x[::2], x[-1:]], 0), [f32(6, 2)], True),
    ("pad", lambda x: jnp.pad(x, ((1, 2), (0, 1))) + 0.0, [f32(2, 3)], True),
    ("pad_interior", lambda x: lax.pad(x, 0.5, [(1, -1, 2), (0, 0, 0)]), [f32(3, 2)], True),
    ("rev", lambda x: jnp.flip(x, 0) * jnp.arange(4.0)[:, None], [f32(4, 2)], True),
    ("split", lambda x: jnp.split(x, [1, 3])[1] * 2, [f32(5)], True),
    ("iota", lambda x: x + jnp.arange(12).reshape(3, 4) + lax.broadcasted_iota(jnp.float32, (3, 4), 1),
     [f32(3, 4)], True),
    ("dynamic_slice", lambda x, i: lax.dynamic_slice(x, (i, 1), (2, 2)), [f32(5, 4), np.int32(2)], True),
    ("dynamic_update_slice", lambda x, u, i: lax.dynamic_update_slice(x, u, (i, 0)),
     [f32(5, 3), f32(2, 3), np.int32(4)], True),
    ("take", lambda x, i: x[i] * 2, [f32(6, 3), i32(4, hi=6)], True),
    ("take_along_axis", lambda x, i: jnp.take_along_axis(x, i, axis=1), [f32(4, 5), i32(4, 2, hi=5)], True),
    ("indexing", lambda x, i: x[:, i] + x[i % 2, :3].sum(), [f32(3, 6), i32(2, hi=6)], True),
    ("one_hot_ce", lambda x, y: -(jax.nn.log_softmax(x) * jax.nn.one_hot(y, 5)).sum(), [f32(4, 5), i32(4)], True),
    ("softmax", lambda x: jax.nn.softmax(x, -1), [f32(3, 5)], True),
    ("logsumexp", lambda x: jax.nn.logsumexp(x, 1), [f32(3, 5)], True),
    ("nn", lambda x: jax.nn.relu(x) + jax.nn.gelu(x) + jax.nn.silu(x) + jax.nn.gelu(x, approximate=False),
     [f32(8)], True),
    ("relu_at_zero", lambda x: jax.nn.relu(x * 0) + jax.nn.relu(x), [f32(5)], True),
    ("layer_norm", lambda x, g: (x - x.mean(-1, keepdims=True)) * lax.rsqrt(x.var(-1, keepdims=True) + 1e-5) * g,
     [f32(3, 8), f32(8)], True),
    ("stop_gradient", lambda x: x * lax.stop_gradient(x), [f32(4)], True),
    ("reduce_precision", lambda x: lax.reduce_precision(x, 8, 7), [f32(5)], False),
    ("bitcast", lambda x: lax.bitcast_convert_type(x, jnp.int32) >> 3, [f32(4)], False),
    ("scan", lambda c, xs: lax.scan(lambda c, x: (jnp.tanh(c * x), c + x), c, xs), [f32(3), f32(4, 3)], True),
    ("scan_reverse_consts", lambda w, xs: lax.scan(lambda c, x: (c @ w + x, None), xs[0], xs, reverse=True)[0],
     [f32(3, 3) * 0.3, f32(4, 3)], True),
    ("fori_loop", lambda x: lax.fori_loop(0, 3, lambda i, c: jnp.sin(c) + i, x), [f32(3)], True),
    ("while", lambda x: lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * 1.5), (0, x))[1],
     [f32(3)], False),
    ("cond", lambda p, x: lax.cond(p > 0, lambda v: jnp.sin(v), lambda v: v * 2, x), [np.float32(1.0), f32(3)], True),
    ("cond_false", lambda p, x: lax.cond(p > 0, lambda v: jnp.sin(v), lambda v: v * 2, x),
     [np.float32(-1.0), f32(3)], True),
    ("switch", lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, jnp.tanh], x), [np.int32(2), f32(3)], True),
    ("nested_jit", lambda x: jax.jit(lambda y: jax.jit(jnp.sin)(y) * 2)(x), [f32(3)], True),
    ("checkpoint", lambda x: jax.checkpoint(lambda y: jnp.sin(jnp.sin(y)))(x), [f32(3)], True),
    ("checkpoint_name", lambda x: jax.ad_checkpoint.checkpoint_name(jnp.sin(x), "a") * 2, [f32(3)], True),
    ("custom_jvp", lambda x: jax.nn.relu(x) + jax.numpy.sinc(x), [f32(4)], True),
    ("custom_vjp", lambda x: _clip_gradient(x * 3.0), [f32(4)], True),
    ("random", lambda k: jax.random.normal(k, (3,)) + jax.random.uniform(jax.random.split(k)[1], (3,))
     + jax.random.bernoulli(jax.random.fold_in(k, 7), 0.3, (3,)), [jax.random.key(1)], False),
    ("random_old_style", lambda k: jax.random.normal(k, (2, 2)), [jax.random.PRNGKey(3)], False),
    ("randint", lambda k: jax.random.randint(k, (6,), 0, 10), [jax.random.key(2)], False),
    ("key_ops", lambda k: jax.random.key_data(jax.random.split(k, 4)[2]), [jax.random.key(5)], False),
]


@jax.custom_vjp
def _clip_gradient(x):
    return jnp.sin(x)


def _cg_fwd(x):
    return jnp.sin(x), jnp.cos(x)


def _cg_bwd(c, g):
    return (jnp.clip(g * c, -0.1, 0.1),)


_clip_gradient.defvjp(_cg_fwd, _cg_bwd)


@pytest.mark.parametrize("name,fn,args,diff", CASES, ids=[c[0] for c in CASES])
def test_values(name, fn, args, diff):
    want = jax.jit(fn)(*args)
    got = ferry.jax.jit(fn)(*args)
    assert_trees_close(got, want, rtol=1e-5, atol=1e-5)


def _loss(fn, n):
    def loss(*args):
        out = fn(*args)
        return sum(jnp.sum(jnp.sin(o.astype(jnp.float32)) * (i + 1)) for i, o in
                   enumerate(jax.tree_util.tree_leaves(out)) if jnp.issubdtype(o.dtype, jnp.inexact))
    return loss


@pytest.mark.parametrize("name,fn,args,diff", [c for c in CASES if c[3]], ids=[c[0] for c in CASES if c[3]])
def test_gradients(name, fn, args, diff):
    argnums = tuple(i for i, a in enumerate(args) if np.issubdtype(np.asarray(a).dtype, np.floating)
                    and np.ndim(a) > 0)
    loss = _loss(fn, len(args))
    want = jax.jit(jax.grad(loss, argnums))(*args)
    got = ferry.jax.jit(ferry.jax.grad(loss, argnums))(*args)
    assert_trees_close(got, want, rtol=1e-4, atol=1e-5)
    # JAX's own differentiation, converted by ferry, agrees too.
    assert_trees_close(ferry.jax.jit(jax.grad(loss, argnums))(*args), want, rtol=1e-4, atol=1e-5)


def test_nextafter_bit_for_bit():
    """Every pair of special float32 values (zeros, subnormals, the smallest normals, infinities,
    NaN, the largest finite, +-1) and random pairs, equal ones among them: jax.jit's bits."""
    special = np.array([1, 2, 0x80000001, 0x80000002, 0x007fffff, 0x80800000, 0x00800000, 0, 0x80000000,
                        0x7f800000, 0xff800000, 0x7fc00000, 0x7f7fffff, 0x3f800000, 0xbf800000],
                       np.uint32).view(np.float32)
    x = np.concatenate([np.repeat(special, len(special)), f32(60)])
    y = np.concatenate([np.tile(special, len(special)), f32(30), x[-30:]])
    got, want = ferry.jax.jit(lax.nextafter)(x, y), jax.jit(lax.nextafter)(x, y)
    np.testing.assert_array_equal(np.asarray(got).view(np.uint32), np.asarray(want).view(np.uint32))


def test_flax_initializers_inside_jit():
    """flax's default initializers (lecun_normal: truncated_normal, which calls nextafter) under
    ferry.jax.jit, as jax.jit(model.init) is commonly written."""
    flax = pytest.importorskip("flax.linen")
    model = flax.Dense(16)
    x = np.ones((2, 8), np.float32)
    init = lambda k: model.init(k, x)
    got, want = ferry.jax.jit(init)(jax.random.key(0)), jax.jit(init)(jax.random.key(0))
    assert_trees_close(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn", [
    lambda a: jnp.cumprod(a, axis=1),
    lambda a: lax.cumprod(a, axis=0, reverse=True),
    lambda a: jnp.prod(a, axis=1) + jnp.prod(a, axis=0)[:4] + jnp.prod(a),
    lambda a: lax.cumlogsumexp(a, axis=1),
], ids=["cumprod", "cumprod_reverse", "prod", "cumlogsumexp"])
def test_products_along_an_axis_with_zeros(fn):
    """cumprod, reduce_prod and cumlogsumexp (parallel prefixes): values within rounding of
    jax.jit's, and gradients equal to jax.grad's where an operand element is zero (no division)."""
    x = f32(4, 6, lo=0.5, hi=1.5)
    x[1, 2] = x[3, 0] = 0.0
    np.testing.assert_allclose(ferry.jax.jit(fn)(x), jax.jit(fn)(x), rtol=1e-5, atol=1e-6)
    loss = lambda a: jnp.sum(jnp.sin(fn(a)))
    np.testing.assert_allclose(ferry.jax.jit(ferry.jax.grad(loss))(x), jax.jit(jax.grad(loss))(x),
                               rtol=1e-5, atol=1e-6)
    assert np.isfinite(np.asarray(ferry.jax.jit(ferry.jax.grad(loss))(x))).all()
