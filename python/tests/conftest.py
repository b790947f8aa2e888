"""Shared helpers: run a function under jax.jit and ferry.jax.jit and compare."""
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import numpy as np  # noqa: E402

import ferry.jax  # noqa: E402


def assert_trees_close(got, want, rtol=2e-5, atol=2e-6):
    g_leaves, g_tree = jax.tree_util.tree_flatten(got)
    w_leaves, w_tree = jax.tree_util.tree_flatten(want)
    assert g_tree == w_tree, f"{g_tree} != {w_tree}"
    for g, w in zip(g_leaves, w_leaves):
        if jax.dtypes.issubdtype(getattr(w, "dtype", np.float32), jax.dtypes.prng_key):
            g, w = jax.random.key_data(g), jax.random.key_data(w)
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, f"{g.dtype}{g.shape} != {w.dtype}{w.shape}"
        if np.issubdtype(w.dtype, np.inexact) or w.dtype.name == "bfloat16":
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(g, w)


def check_invariants(compiled):
    """The plan is the memory: what the last run measured equals what the plan said."""
    m = compiled.memory_analysis()
    e = compiled.execution_stats()
    assert e.device_high_water_bytes == m.peak_memory_in_bytes, (e, m)
    return m
