"""Reference values from JAX for ferry's model operations (issue 16): random numbers, the new
primitives and the nn functions, on fixed inputs. Writes tests/trace/data/jax_nn_reference.json.

  python3 -m venv /tmp/jaxenv && /tmp/jaxenv/bin/pip install 'jax[cpu]' numpy
  /tmp/jaxenv/bin/python bench/peers/nn_reference.py

Keys are stored as jax.random.key_data (uint32 words); ferry's i32 keys hold the same bits.
"""
import json
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "trace", "data", "jax_nn_reference.json")


def u32(a):
    return [int(v) for v in np.asarray(a, dtype=np.uint32).ravel()]


def f32(a):
    # JSON has no NaN: null stands for it.
    return [None if np.isnan(v) else float(v) for v in np.asarray(a, dtype=np.float32).ravel()]


def i32(a):
    return [int(v) for v in np.asarray(a, dtype=np.int32).ravel()]


def main():
    ref = {"jax_version": jax.__version__, "threefry_partitionable": bool(jax.config.jax_threefry_partitionable)}
    # Random numbers: several keys.
    rnd = []
    for seed in [0, 1, 42, 123456789, -7]:
        k = jax.random.key(seed)
        e = {"seed": seed, "key": u32(jax.random.key_data(k))}
        e["split3"] = u32(jax.random.key_data(jax.random.split(k, 3)))
        e["fold_in_5"] = u32(jax.random.key_data(jax.random.fold_in(k, 5)))
        e["fold_in_big"] = u32(jax.random.key_data(jax.random.fold_in(k, 4000000000)))
        e["bits_7"] = u32(jax.random.bits(k, (7,)))
        e["bits_2x3"] = u32(jax.random.bits(k, (2, 3)))
        e["uniform_2x5"] = f32(jax.random.uniform(k, (2, 5)))
        e["uniform_m2_3_6"] = f32(jax.random.uniform(k, (6,), minval=-2.0, maxval=3.0))
        e["normal_9"] = f32(jax.random.normal(k, (9,)))
        e["bernoulli_03_10"] = [bool(b) for b in np.asarray(jax.random.bernoulli(k, 0.3, (10,)))]
        e["randint_m5_17_8"] = i32(jax.random.randint(k, (8,), -5, 17))
        e["randint_0_big_5"] = i32(jax.random.randint(k, (5,), 0, 2**31 - 1))
        rnd.append(e)
    ref["random"] = rnd

    # Elementwise and axis primitives on fixed inputs.
    x = np.array([[-2.5, -1.5, -0.5, 0.0], [0.5, 1.5, 2.5, -3.7], [0.3, 0.3, -0.2, 7.25]], np.float32)
    y = np.array([[1.5, -2.0, 0.75, 3.0], [-1.25, 0.4, 2.0, 1.1], [0.3, -0.7, 0.9, 2.5]], np.float32)
    p = np.array([[-0.99, -0.5, 0.0, 0.3], [0.7, 0.999, -0.1, 0.25], [0.5, -0.75, 0.9, -0.3]], np.float32)
    prims = {"x": f32(x), "y": f32(y), "p": f32(p), "shape": list(x.shape)}
    prims["erf"] = f32(jax.lax.erf(x))
    prims["erf_inv"] = f32(jax.lax.erf_inv(p))
    prims["log1p"] = f32(jnp.log1p(jnp.abs(x)))
    prims["expm1"] = f32(jnp.expm1(x))
    prims["floor"] = f32(jnp.floor(x))
    prims["ceil"] = f32(jnp.ceil(x))
    prims["round"] = f32(jax.lax.round(x))
    prims["rem"] = f32(jax.lax.rem(x, y))
    prims["clamp"] = f32(jax.lax.clamp(-1.0, x, 2.0))
    prims["reduce_min_1"] = f32(jnp.min(x, 1))
    prims["argmax_1"] = i32(jnp.argmax(x, 1))
    prims["argmin_0"] = i32(jnp.argmin(x, 0))
    prims["cumsum_1"] = f32(jax.lax.cumsum(x, 1))
    prims["cumsum_0_rev"] = f32(jax.lax.cumsum(x, 0, reverse=True))
    prims["cummax_1"] = f32(jax.lax.cummax(x, 1))
    prims["cummin_0"] = f32(jax.lax.cummin(x, 0))
    a = np.array([5, -3, 12, 0x7fffffff, -1], np.int32)
    b = np.array([3, 6, -5, 1, 7], np.int32)
    prims["ia"], prims["ib"] = i32(a), i32(b)
    prims["iand"] = i32(jax.lax.bitwise_and(a, b))
    prims["ior"] = i32(jax.lax.bitwise_or(a, b))
    prims["ixor"] = i32(jax.lax.bitwise_xor(a, b))
    prims["inot"] = i32(jax.lax.bitwise_not(a))
    prims["irem"] = i32(jax.lax.rem(a, b))
    prims["shl3"] = i32(jax.lax.shift_left(a, np.int32(3)))
    prims["shr3"] = i32(jax.lax.shift_right_logical(a, np.int32(3)))
    # Indexing.
    table = np.arange(20, dtype=np.float32).reshape(5, 4) * 0.5 - 3.0
    ids = np.array([[4, 0], [2, 2], [1, 3]], np.int32)
    prims["table"] = f32(table)
    prims["ids"] = i32(ids)
    prims["take_0"] = f32(jnp.take(table, ids, axis=0))
    prims["take_1"] = f32(jnp.take(table, np.array([3, 1], np.int32), axis=1))
    prims["take_oob"] = f32(jnp.take(table, np.array([1, 7, -9, -1], np.int32), axis=0))
    prims["take_along_neg"] = f32(jnp.take_along_axis(table, np.array([[-1], [0], [3], [-4], [9]], np.int32), axis=1))
    prims["one_hot"] = f32(jax.nn.one_hot(np.array([0, 3, 5, -1], np.int32), 4))
    sidx = np.array([[1], [3], [1]], np.int32)
    upd = np.array([[1.0, 2.0, 3.0, 4.0], [10.0, 20.0, 30.0, 40.0], [100.0, 200.0, 300.0, 400.0]], np.float32)
    dn = jax.lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                         scatter_dims_to_operand_dims=(0,))
    prims["scatter_idx"], prims["scatter_upd"] = i32(sidx), f32(upd)
    prims["scatter_add"] = f32(jax.lax.scatter_add(jnp.asarray(table), sidx, upd, dn))
    gdn = jax.lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    gidx = np.array([[1], [3], [4]], np.int32)
    prims["gather_rows_2"] = f32(jax.lax.gather(jnp.asarray(table), gidx, gdn, (1, 2),
                                                mode=jax.lax.GatherScatterMode.CLIP))
    ref["prims"] = prims

    # nn functions.
    logits = np.array([[2.0, -1.0, 0.5, 3.0, -2.0], [0.1, 0.2, 0.3, -0.4, 100.0], [-5.0, 4.0, 1.0, 1.0, 0.0]],
                      np.float32)
    labels = np.array([3, 4, 1], np.int32)
    scale = np.array([1.0, 0.5, 2.0, -1.0, 0.25], np.float32)
    bias = np.array([0.0, 0.1, -0.2, 0.3, 0.5], np.float32)
    nn = {"logits": f32(logits), "labels": i32(labels), "scale": f32(scale), "bias": f32(bias),
          "shape": list(logits.shape)}
    nn["relu"] = f32(jax.nn.relu(logits))
    nn["gelu_tanh"] = f32(jax.nn.gelu(logits, approximate=True))
    nn["gelu_exact"] = f32(jax.nn.gelu(logits, approximate=False))
    nn["silu"] = f32(jax.nn.silu(logits))
    nn["softmax"] = f32(jax.nn.softmax(logits, axis=-1))
    nn["softmax_0"] = f32(jax.nn.softmax(logits, axis=0))
    nn["log_softmax"] = f32(jax.nn.log_softmax(logits, axis=-1))
    nn["logsumexp_1"] = f32(jax.nn.logsumexp(logits, axis=1))
    nn["logsumexp_all"] = f32(jax.nn.logsumexp(logits))

    def layer_norm(v, s, b, eps=1e-5):
        m = v.mean(-1, keepdims=True)
        var = ((v - m) ** 2).mean(-1, keepdims=True)
        return (v - m) * jax.lax.rsqrt(var + eps) * s + b

    nn["layer_norm"] = f32(layer_norm(jnp.asarray(logits), scale, bias))
    nn["rms_norm"] = f32(logits * jax.lax.rsqrt((logits ** 2).mean(-1, keepdims=True) + 1e-6) * scale)
    lse = jax.nn.logsumexp(logits, axis=-1)
    nn["cross_entropy"] = f32(lse - jnp.take_along_axis(jnp.asarray(logits), labels[:, None], axis=-1)[:, 0])

    def dropout(key, rate, v):
        keep = jax.random.bernoulli(key, 1.0 - rate, v.shape)
        return jnp.where(keep, v / (1.0 - rate), 0.0)

    nn["dropout_k3_r05"] = f32(dropout(jax.random.key(3), 0.5, jnp.asarray(logits)))
    # Gradients of sum(w * f(x)) for a few functions, for the record (the tests use finite differences).
    w = np.linspace(-1.0, 1.0, logits.size, dtype=np.float32).reshape(logits.shape)
    nn["w"] = f32(w)
    nn["grad_softmax"] = f32(jax.grad(lambda v: jnp.sum(w * jax.nn.softmax(v)))(jnp.asarray(logits)))
    nn["grad_cross_entropy"] = f32(jax.grad(
        lambda v: jnp.sum(jax.nn.logsumexp(v, axis=-1) - jnp.take_along_axis(v, labels[:, None], axis=-1)[:, 0]))(
        jnp.asarray(logits)))
    nn["grad_gelu_exact"] = f32(jax.grad(lambda v: jnp.sum(w * jax.nn.gelu(v, approximate=False)))(jnp.asarray(logits)))
    ref["nn"] = nn

    with open(OUT, "w") as f:
        json.dump(ref, f, indent=1)
    print(f"wrote {OUT} (jax {jax.__version__}, threefry_partitionable={ref['threefry_partitionable']})",
          file=sys.stderr)


if __name__ == "__main__":
    main()
