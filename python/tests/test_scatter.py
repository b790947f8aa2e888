"""x.at[...].set(...) (lax.scatter) under ferry.jax.jit against jax.jit bit for bit: repeated
indices (the last update stays, as on XLA's CPU), row and column windows, out-of-bounds modes,
bools and integers; gradients against jax.grad, where only the update that stayed gets one."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ferry.jax

rng = np.random.default_rng(5)


def same(fn, *args):
    got, want = ferry.jax.jit(fn)(*args), jax.jit(fn)(*args)
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes(), (got, want)


@pytest.mark.parametrize("case", ["elements", "repeated", "rows", "columns", "slices", "scalar", "2d_points"])
def test_set_matches_jax(case):
    x = rng.normal(size=(6, 5)).astype(np.float32)
    v = rng.normal(size=(6, 5)).astype(np.float32)
    fns = {
        "elements": lambda a, b: a.at[2, 3].set(b[0, 0]),
        "repeated": lambda a, b: a.reshape(-1).at[jnp.array([3, 7, 3, 29, 7, 3])].set(b.reshape(-1)[:6]),
        "rows": lambda a, b: a.at[jnp.array([4, 1, 4])].set(b[:3]),
        "columns": lambda a, b: a.at[:, jnp.array([0, 2, 0])].set(b[:, :3]),
        "slices": lambda a, b: a.at[1:4, 2:].set(b[:3, :3]),
        "scalar": lambda a, b: a.at[jnp.array([0, 5]), 1].set(7.0),
        "2d_points": lambda a, b: a.at[jnp.array([0, 1, 0]), jnp.array([4, 4, 4])].set(b[0, :3]),
    }
    same(fns[case], x, v)


def test_out_of_bounds_modes():
    x = np.arange(8, dtype=np.float32)
    idx = np.array([1, 9, -1, -20], np.int32)
    v = np.array([10, 20, 30, 40], np.float32)
    same(lambda a, i, b: a.at[i].set(b, mode="drop"), x, idx, v)
    same(lambda a, i, b: a.at[i].set(b, mode="clip"), x, idx, v)
    same(lambda a, i, b: a.at[i].set(b), x, idx, v)  # JAX's default: negative indices wrap once, then drop


def test_bools_and_integers():
    x = rng.integers(0, 2, (7,)).astype(bool)
    same(lambda a: a.at[jnp.array([0, 3, 3])].set(jnp.array([True, False, True])), x)
    n = rng.integers(-50, 50, (3, 4)).astype(np.int32)
    same(lambda a: a.at[jnp.array([2, 0]), :].set(-1), n)


@pytest.mark.parametrize("fn", [
    lambda a, b: a.reshape(-1).at[jnp.array([3, 7, 3, 29, 7, 3])].set(b.reshape(-1)[:6]),
    lambda a, b: a.at[jnp.array([4, 1, 4])].set(b[:3] * 2.0),
    lambda a, b: a.at[:, 1:3].set(jnp.tanh(b[:, :2])),
], ids=["repeated", "rows", "slice"])
def test_gradients(fn):
    x = rng.normal(size=(6, 5)).astype(np.float32)
    v = rng.normal(size=(6, 5)).astype(np.float32)
    loss = lambda a, b: jnp.sum(jnp.sin(fn(a, b)) * jnp.arange(fn(a, b).size, dtype=np.float32).reshape(fn(a, b).shape))
    got = ferry.jax.jit(ferry.jax.grad(loss, argnums=(0, 1)))(x, v)
    want = jax.jit(jax.grad(loss, argnums=(0, 1)))(x, v)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
