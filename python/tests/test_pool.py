"""reduce_window (flax's max_pool, min pooling, avg_pool, global and dilated windows) under
ferry.jax.jit against jax.jit, and its gradients: jax.grad's (select_and_scatter_add for max/min,
pad and reduce_window_sum for sums) and ferry.jax.grad's, on inputs with ties (after a relu)
where the gradient must go to the first extreme of each window alone."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import ferry.jax
from conftest import assert_trees_close

rng = np.random.default_rng(11)
flax = pytest.importorskip("flax.linen")

POOLS = {
    "max_2x2_s2": lambda a: flax.max_pool(a, (2, 2), (2, 2)),
    "max_3x3_s2_same": lambda a: flax.max_pool(a, (3, 3), (2, 2), padding="SAME"),
    "min_2x2": lambda a: lax.reduce_window(a, jnp.inf, lax.min, (1, 2, 2, 1), (1, 1, 1, 1), "VALID"),
    "avg_2x2_same": lambda a: flax.avg_pool(a, (2, 2), (1, 1), padding="SAME"),
    "avg_3x3_s2": lambda a: flax.avg_pool(a, (3, 3), (2, 2)),
    "global_max": lambda a: lax.reduce_window(a, -jnp.inf, lax.max, (1, 9, 10, 1), (1, 1, 1, 1), "VALID"),
    "dilated_sum": lambda a: lax.reduce_window(a, 0.0, lax.add, (1, 2, 2, 1), (1, 1, 1, 1), "VALID",
                                               window_dilation=(1, 2, 3, 1)),
    "base_dilated_max": lambda a: lax.reduce_window(a, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 1, 1, 1), "VALID",
                                                    base_dilation=(1, 2, 1, 1)),
}


@pytest.mark.parametrize("name", list(POOLS))
@pytest.mark.parametrize("ties", [False, True], ids=["random", "relu_ties"])
def test_values_and_gradients(name, ties):
    pool = POOLS[name]
    x = rng.normal(size=(2, 9, 10, 3)).astype(np.float32)
    if ties:
        x = np.maximum(x, 0)
    got = ferry.jax.jit(pool)(x)
    if "avg" in name:
        assert_trees_close(got, jax.jit(pool)(x))
    else:  # max, min and sums of one add order: exactly
        np.testing.assert_array_equal(got, jax.jit(pool)(x))
    loss = lambda a: jnp.sum(jnp.sin(pool(a)) * jnp.arange(pool(a).size, dtype=np.float32).reshape(pool(a).shape))
    want = jax.jit(jax.grad(loss))(x)
    assert_trees_close(ferry.jax.jit(jax.grad(loss))(x), want, rtol=1e-5, atol=1e-4)
    assert_trees_close(ferry.jax.jit(ferry.jax.grad(loss))(x), want, rtol=1e-5, atol=1e-4)


def test_nan_and_integers():
    x = rng.normal(size=(1, 4, 4, 1)).astype(np.float32)
    x[0, 1, 1, 0] = np.nan
    pool = POOLS["max_2x2_s2"]
    np.testing.assert_array_equal(ferry.jax.jit(pool)(x), jax.jit(pool)(x))
    i = rng.integers(-9, 9, (1, 6, 6, 1)).astype(np.int32)
    imax = lambda a: lax.reduce_window(a, -2 ** 31, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    np.testing.assert_array_equal(ferry.jax.jit(imax)(i), jax.jit(imax)(i))
