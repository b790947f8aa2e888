"""The JAX side of ferry's benchmark models, written as examples/models/models.cpp writes them
(shared by peers.py and gpt_reference.py)."""
import math

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

GPT_NAMES = ["query_proj", "key_proj", "value_proj", "out_proj", "mlpwi", "mlpwo"]
POLICIES = ["no checkpoint", "nothing_saveable", "dots_saveable", "dots_with_no_batch_dims_saveable",
            "offload_dot_with_no_batch_dims", "names saved", "names offloaded"]



def jax_policy(name, names):
    cp = jax.checkpoint_policies
    return {
        "nothing_saveable": cp.nothing_saveable,
        "dots_saveable": cp.dots_saveable,
        "dots_with_no_batch_dims_saveable": cp.dots_with_no_batch_dims_saveable,
        "offload_dot_with_no_batch_dims": cp.offload_dot_with_no_batch_dims("device", "pinned_host"),
        "names saved": cp.save_only_these_names(*names),
        "names offloaded": cp.save_and_offload_only_these_names(
            names_which_can_be_saved=[], names_which_can_be_offloaded=names,
            offload_src="device", offload_dst="pinned_host"),
    }.get(name)


def maybe_remat(f, policy_name, names):
    if policy_name == "no checkpoint":
        return f
    return jax.checkpoint(f, policy=jax_policy(policy_name, names))


def jax_scan_mlp_loss(x, w1, w2, policy_name):
    def layer(h, w):
        h = checkpoint_name(h, "x")
        return (h @ w[0]) @ w[1], None
    layer = maybe_remat(layer, policy_name, ["x"])
    out, _ = jax.lax.scan(layer, x, (w1, w2))
    return jnp.sum(out)


def layer_norm(x, g, b):
    mu = jnp.mean(x, axis=-1, keepdims=True)
    xc = x - mu
    var = jnp.mean(xc * xc, axis=-1, keepdims=True)
    return xc * jax.lax.rsqrt(var + 1e-5) * g + b


def dropout(key, rate, x):
    """flax's inverted dropout, as ferry's nn::dropout."""
    if rate == 0.0:
        return x
    keep = jax.random.bernoulli(key, 1.0 - rate, x.shape)
    return jnp.where(keep, x / (1.0 - rate), 0.0)


def jax_gpt_loss(p, tokens, targets, cfg, policy_name):
    """ferry's gpt_loss: take embeddings, pre-layer-norm blocks with GPT-2's dropout, cross entropy.
    The dropout keys are ferry's: fold_in(key(dropout_seed), sum(tokens)), split per layer, then in
    three per block; jax.random draws the same bits as ferry's random.h."""
    B, S, D, H, V = cfg["batch"], cfg["seq"], cfg["d_model"], cfg["heads"], cfg["vocab"]
    rate = cfg.get("dropout", 0.1)
    Dh = D // H
    name = checkpoint_name
    x = jnp.take(p["embed"], tokens, axis=0) + p["pos"]
    key = jax.random.fold_in(jax.random.key(cfg.get("dropout_seed", 0)), jnp.sum(tokens))

    def block(h, w):
        ln1_g, ln1_b, wq, wk, wv, wo, ln2_g, ln2_b, w_in, b_in, w_out, b_out, k = w
        keys = jax.random.split(k, 3)
        a = layer_norm(h, ln1_g, ln1_b)
        heads = lambda t: jnp.transpose(t.reshape(B, S, H, Dh), (0, 2, 1, 3))
        q = heads(name(a @ wq, "query_proj"))
        kk = heads(name(a @ wk, "key_proj"))
        v = heads(name(a @ wv, "value_proj"))
        scores = jnp.einsum("bhsd,bhtd->bhst", q, kk) * (1.0 / math.sqrt(Dh))
        row = jax.lax.broadcasted_iota(jnp.int32, (B, H, S, S), 2)
        col = jax.lax.broadcasted_iota(jnp.int32, (B, H, S, S), 3)
        scores = jnp.where(col <= row, scores, -1e9)
        attn = dropout(keys[0], rate, jax.nn.softmax(scores, axis=3))
        o = jnp.einsum("bhst,bhtd->bhsd", attn, v)
        o = jnp.transpose(o, (0, 2, 1, 3)).reshape(B, S, D)
        h = h + dropout(keys[1], rate, name(o @ wo, "out_proj"))
        m = layer_norm(h, ln2_g, ln2_b)
        m = jax.nn.gelu(name(m @ w_in, "mlpwi") + b_in, approximate=True)
        h = h + dropout(keys[2], rate, name(m @ w_out, "mlpwo") + b_out)
        return h, None

    block = maybe_remat(block, policy_name, GPT_NAMES)
    stacked = tuple(p[n] for n in ["ln1_g", "ln1_b", "wq", "wk", "wv", "wo", "ln2_g", "ln2_b", "w_in", "b_in",
                                   "w_out", "b_out"]) + (jax.random.split(key, cfg["layers"]),)
    x, _ = jax.lax.scan(block, x, stacked)
    logits = layer_norm(x, p["ln_f_g"], p["ln_f_b"]) @ p["unembed"]
    lse = jax.nn.logsumexp(logits, axis=-1)
    picked = jnp.take_along_axis(logits, targets[..., None], axis=-1)[..., 0]
    return jnp.mean(lse - picked)


def gpt_shapes(cfg):
    L, D, V, S = cfg["layers"], cfg["d_model"], cfg["vocab"], cfg["seq"]
    F = 4 * D
    return {"embed": (V, D), "pos": (S, D), "ln1_g": (L, D), "ln1_b": (L, D), "wq": (L, D, D), "wk": (L, D, D),
            "wv": (L, D, D), "wo": (L, D, D), "ln2_g": (L, D), "ln2_b": (L, D), "w_in": (L, D, F), "b_in": (L, F),
            "w_out": (L, F, D), "b_out": (L, D), "ln_f_g": (D,), "ln_f_b": (D,), "unembed": (D, V)}
