"""lax.sort and lax.top_k (and what jnp builds on them: sort, argsort, median, take_along_axis)
under ferry.jax.jit against jax.jit: positions and values bit for bit, on ties, NaN and signed
zeros, every axis and several dtypes; gradients against jax.grad."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import ferry.jax

rng = np.random.default_rng(3)


def ties(*shape, values=7, dtype=np.float32):
    """Values drawn from few levels, so lines have many ties."""
    return (rng.integers(0, values, shape) - values // 2).astype(dtype)


def specials(n):
    """NaN of both signs, infinities, signed zeros and ties, shuffled."""
    v = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1.0, 2.5, -0.0, np.nan],
                 np.float32)
    return rng.permutation(np.resize(v, n))


def same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    assert got.tobytes() == want.tobytes(), (got, want)


def both(fn, *args):
    for g, w in zip(jax.tree.leaves(ferry.jax.jit(fn)(*args)), jax.tree.leaves(jax.jit(fn)(*args))):
        same_bits(g, w)


@pytest.mark.parametrize("shape,axis", [((13,), 0), ((4, 9), 1), ((9, 4), 0), ((3, 17, 5), 1), ((2, 3, 40), -1)])
def test_sort_and_argsort_every_axis(shape, axis):
    x = ties(*shape)
    both(lambda a: jnp.sort(a, axis=axis), x)
    both(lambda a: jnp.argsort(a, axis=axis, stable=True), x)
    both(lambda a: jnp.argsort(a, axis=axis, stable=True, descending=True), x)
    both(lambda a: jnp.sort(a, axis=axis, descending=True), x)


def test_total_order_of_nan_and_signed_zeros():
    x = specials(24).reshape(2, 12)
    both(lambda a: jnp.sort(a, axis=1), x)
    both(lambda a: jnp.argsort(a, axis=1, stable=True), x)
    both(lambda a: lax.top_k(a, 5), x)


@pytest.mark.parametrize("dtype", [np.float16, jnp.bfloat16, np.int32, np.uint32, np.bool_])
def test_dtypes(dtype):
    if dtype == np.bool_:
        x = rng.integers(0, 2, (3, 11)).astype(bool)
    elif dtype == np.uint32:
        x = rng.integers(0, 2 ** 32 - 1, (3, 11), dtype=np.uint64).astype(np.uint32)
        x[0, :3] = [0, 2 ** 31, 2 ** 32 - 1]
    else:
        x = ties(3, 11).astype(dtype)
    both(lambda a: jnp.sort(a, axis=1), x)
    both(lambda a: jnp.argsort(a, axis=0, stable=True), x)
    if dtype != np.bool_:
        both(lambda a: lax.top_k(a, 4), x)


def test_multi_operand_sort_with_two_keys():
    k1, k2, payload = ties(5, 16, values=3), ties(5, 16, values=4), rng.normal(size=(5, 16)).astype(np.float32)
    both(lambda a, b, c: lax.sort((a, b, c), dimension=1, num_keys=2), k1, k2, payload)
    both(lambda a, b, c: lax.sort((a, b, c), dimension=0, num_keys=1), k1, k2, payload)
    both(lambda a, b: lax.sort_key_val(a, b, dimension=1), k1, payload)


@pytest.mark.parametrize("k,axis", [(1, -1), (3, -1), (6, 0), (0, -1)])
def test_top_k(k, axis):
    x = ties(6, 8)
    both(lambda a: lax.top_k(a, k, axis=axis), x)


def test_median_quantile_and_take_along_axis():
    x = rng.normal(size=(4, 9)).astype(np.float32)
    both(lambda a: jnp.median(a, axis=1), x)
    # Interpolation is arithmetic, not order: XLA may round it differently.
    np.testing.assert_allclose(ferry.jax.jit(lambda a: jnp.quantile(a, 0.3, axis=0))(x),
                               jnp.quantile(x, 0.3, axis=0), rtol=1e-6)
    both(lambda a: jnp.take_along_axis(a, jnp.argsort(-a, axis=1), axis=1), x)


@pytest.mark.parametrize("fn", [
    lambda a: jnp.sort(a, axis=1) * jnp.arange(7.0),
    lambda a: jnp.sort(a, axis=0, descending=True)[:2],
    lambda a: lax.top_k(a, 3)[0] ** 2,
    lambda a: jnp.median(a, axis=1),
    lambda a: lax.sort((a, a * 2), num_keys=1, dimension=1)[1] * jnp.arange(7.0),
], ids=["sort", "sort_descending", "top_k", "median", "payload"])
def test_gradients(fn):
    x = rng.normal(size=(5, 7)).astype(np.float32)
    loss = lambda a: jnp.sum(jnp.sin(fn(a)))
    np.testing.assert_allclose(ferry.jax.jit(ferry.jax.grad(loss))(x), jax.jit(jax.grad(loss))(x), rtol=1e-5, atol=1e-6)


def test_prng_keys_are_refused_by_name():
    keys = jax.random.split(jax.random.key(0), 4)
    with pytest.raises(ferry.Error, match="UNIMPLEMENTED"):
        ferry.jax.jit(lambda k: lax.sort(k))(keys)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, jnp.bfloat16, np.int32, np.uint32])
def test_searchsorted_and_total_order_comparisons(dtype):
    """jnp.searchsorted (both sides) and jnp.interp, and lt_to/le_to themselves on NaN of both
    signs and signed zeros: jax.jit's results exactly."""
    if np.issubdtype(np.dtype(dtype), np.integer):
        edges, q = np.sort(rng.integers(0, 50, 9)).astype(dtype), rng.integers(0, 50, 30).astype(dtype)
    else:
        edges = np.sort(rng.normal(size=9)).astype(dtype)
        q = np.concatenate([rng.normal(size=30), [np.nan, -np.inf, np.inf, 0.0, -0.0]]).astype(dtype)
        q = np.concatenate([q, edges])
    for side in ("left", "right"):
        both(lambda e, v: jnp.searchsorted(e, v, side=side), edges, q)
    if dtype == np.float32:
        np.testing.assert_allclose(ferry.jax.jit(lambda v: jnp.interp(v, edges, jnp.arange(9.0)))(q[:30]),
                                   jnp.interp(q[:30], edges, jnp.arange(9.0)), rtol=1e-6)
        x = np.array([np.nan, -np.nan, -0.0, 0.0, 1.0, -np.inf, np.inf, -1.0], np.float32)
        y = x[::-1].copy()
        both(lambda a, b: (lax.lt_to_p.bind(a, b), lax.le_to_p.bind(a, b)), x, y)
