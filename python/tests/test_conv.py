"""lax.conv_general_dilated (flax's Conv, conv_transpose, depthwise convolutions) under
ferry.jax.jit against jax.jit: strides, SAME/VALID/negative padding, input and kernel dilation,
feature groups, 1-D/2-D/3-D and both layouts; gradients by jax.grad (whose weight gradients are
convolutions with batch groups and whole activations as kernels) and by ferry.jax.grad."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import ferry.jax
from conftest import assert_trees_close

rng = np.random.default_rng(7)
NHWC = ("NHWC", "HWIO", "NHWC")


def normal(*shape):
    return rng.normal(size=shape).astype(np.float32)


CASES = {
    "same": (dict(window_strides=(1, 1), padding="SAME", dimension_numbers=NHWC), (2, 9, 10, 3), (3, 3, 3, 4)),
    "valid_stride2": (dict(window_strides=(2, 2), padding="VALID", dimension_numbers=NHWC), (2, 9, 10, 3), (3, 3, 3, 4)),
    "negative_padding": (dict(window_strides=(1, 2), padding=((2, -1), (1, 0)), dimension_numbers=NHWC),
                         (2, 9, 10, 3), (3, 2, 3, 4)),
    "lhs_dilation": (dict(window_strides=(1, 1), padding=((1, 1), (2, 2)), lhs_dilation=(2, 1),
                          dimension_numbers=NHWC), (1, 6, 7, 2), (3, 3, 2, 3)),
    "rhs_dilation": (dict(window_strides=(1, 1), padding="SAME", rhs_dilation=(2, 2), dimension_numbers=NHWC),
                     (2, 9, 10, 3), (3, 3, 3, 4)),
    "depthwise": (dict(window_strides=(1, 1), padding="SAME", feature_group_count=3, dimension_numbers=NHWC),
                  (2, 8, 8, 3), (3, 3, 1, 6)),
    "groups": (dict(window_strides=(2, 1), padding="SAME", feature_group_count=2, dimension_numbers=NHWC),
               (2, 8, 8, 4), (2, 3, 2, 6)),
    "nchw_1d": (dict(window_strides=(2,), padding=((1, 2),)), (2, 3, 11), (5, 3, 4)),
    "nchw_3d": (dict(window_strides=(1, 2, 1), padding="SAME"), (1, 2, 5, 6, 4), (3, 2, 2, 3, 2)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients(name):
    kw, xs, ws = CASES[name]
    x, w = normal(*xs), normal(*ws)
    conv = lambda a, b: lax.conv_general_dilated(a, b, **kw)
    assert_trees_close(ferry.jax.jit(conv)(x, w), jax.jit(conv)(x, w), rtol=1e-5, atol=1e-5)
    loss = lambda a, b: jnp.sum(jnp.sin(conv(a, b)))
    want = jax.jit(jax.grad(loss, argnums=(0, 1)))(x, w)
    assert_trees_close(ferry.jax.jit(jax.grad(loss, argnums=(0, 1)))(x, w), want, rtol=1e-4, atol=1e-5)
    assert_trees_close(ferry.jax.jit(ferry.jax.grad(loss, argnums=(0, 1)))(x, w), want, rtol=1e-4, atol=1e-5)


def test_bf16_accumulates_in_float32():
    x, w = normal(2, 9, 10, 3), normal(3, 3, 3, 4)
    conv = lambda a, b: lax.conv_general_dilated(a.astype(jnp.bfloat16), b.astype(jnp.bfloat16), (1, 1), "SAME",
                                                 dimension_numbers=NHWC).astype(jnp.float32)
    got, want = np.asarray(ferry.jax.jit(conv)(x, w)), np.asarray(jax.jit(conv)(x, w))
    # One rounding to bf16 apart at most (8 bits of mantissa).
    np.testing.assert_allclose(got, want, rtol=2 ** -7, atol=1e-2)


def test_flax_conv_and_conv_transpose():
    flax = pytest.importorskip("flax.linen")
    x = normal(2, 9, 10, 3)
    model = flax.Conv(8, (3, 3), strides=2)
    params = model.init(jax.random.key(0), x)
    apply = lambda p, a: model.apply(p, a)
    assert_trees_close(ferry.jax.jit(apply)(params, x), jax.jit(apply)(params, x), rtol=1e-5, atol=1e-5)
    grad = jax.grad(lambda p, a: jnp.sum(model.apply(p, a) ** 2))
    assert_trees_close(ferry.jax.jit(grad)(params, x), jax.jit(grad)(params, x), rtol=1e-4, atol=1e-4)
    w = normal(3, 3, 3, 4)
    transpose = lambda a, b: lax.conv_transpose(a, b, (2, 2), "SAME", dimension_numbers=NHWC)
    assert_trees_close(ferry.jax.jit(transpose)(x, w), jax.jit(transpose)(x, w), rtol=1e-5, atol=1e-5)


def test_integer_convolutions_are_refused():
    x, w = np.ones((1, 4, 4, 1), np.int32), np.ones((2, 2, 1, 1), np.int32)
    with pytest.raises(ferry.Error, match="UNIMPLEMENTED"):
        ferry.jax.jit(lambda a, b: lax.conv_general_dilated(a, b, (1, 1), "VALID", dimension_numbers=NHWC))(x, w)
