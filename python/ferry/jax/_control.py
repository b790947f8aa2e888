"""Converter rules for JAX's higher-order primitives, memory kinds, names and random keys.

- jit / closed_call / core_call: the body, inline.
- scan, cond, while: ferry's scan, cond and while_loop, whose bodies run the same interpreter.
- remat2 (jax.checkpoint) and remat3's call_hi_primitive: where ferry differentiates the
  checkpoint (inside ferry.jax.grad / value_and_grad / vjp), a ferry checkpoint whose equations
  carry the JAX policy's decisions (_policies.py); elsewhere the body inline, as JAX would run it.
  remat2[differentiated=True] (JAX's own backward pass) is its body.
- custom_jvp_call / custom_vjp_call: undifferentiated, the primal body; inside ferry's
  differentiation, a ferry custom_vjp whose forward and backward are JAX's own vjp of the
  equation (JAX's custom rule), traced by JAX and interpreted here.
- name: checkpoint_name. device_put: ferry's device_put to the memory kind asked for (a device
  value sent to the device is reported in warnings(): that copy offloads nothing).
- random_seed / random_bits / random_split / random_fold_in: JAX's own implementation for the
  key's PRNG (threefry), traced by JAX on the key data and interpreted; random_wrap / unwrap are
  identities on the key data.
"""
import numpy as np

import jax
from jax._src import core
from jax._src.random import prng

from ferry import _ferry as F
from ferry._errors import unimplemented
from ferry.jax._interpreter import (
    Context, call_closed, eval_jaxpr, is_key, physical_shape, rule, spec, where)


@rule("jit", "pjit", "closed_call", "core_call", higher_order=True)
def _call(ctx, eqn, *args):
    closed = eqn.params.get("jaxpr") or eqn.params.get("call_jaxpr")
    if isinstance(closed, core.Jaxpr):
        return eval_jaxpr(ctx, closed, [], list(args))
    return call_closed(ctx, closed, list(args), eqn)


@rule("scan", higher_order=True)
def _scan(ctx, eqn, *args):
    p = eqn.params
    closed = p["jaxpr"]
    n_consts, n_carry = p["num_consts"], p["num_carry"]
    consts, init, xs = args[:n_consts], args[n_consts:n_consts + n_carry], args[n_consts + n_carry:]
    policy = ctx.policy

    def body(values):
        saved, ctx.policy = ctx.policy, policy
        try:
            return call_closed(ctx, closed, list(consts) + list(values), eqn)
        finally:
            ctx.policy = saved

    return F.scan(body, list(init), list(xs), p["length"], p["reverse"])


@rule("cond", higher_order=True)
def _cond(ctx, eqn, index, *operands):
    policy = ctx.policy

    def branch(closed):
        def run(values):
            saved, ctx.policy = ctx.policy, policy
            try:
                return call_closed(ctx, closed, list(values), eqn)
            finally:
                ctx.policy = saved
        return run

    if index.dtype == "bool":
        index = F.convert(index, "i32")
    return F.cond(index, [branch(b) for b in eqn.params["branches"]], list(operands))


@rule("while", higher_order=True)
def _while(ctx, eqn, *args):
    p = eqn.params
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    cond_consts, body_consts, init = args[:nc], args[nc:nc + nb], args[nc + nb:]

    def cond(values):
        (pred,) = call_closed(ctx, p["cond_jaxpr"], list(cond_consts) + list(values), eqn)
        return pred

    def body(values):
        return call_closed(ctx, p["body_jaxpr"], list(body_consts) + list(values), eqn)

    return F.while_loop(cond, body, list(init))


def _checkpoint(ctx, eqn, closed, policy, prevent_cse, args):
    """A JAX checkpoint: a ferry checkpoint where ferry differentiates it, else its body."""
    from ferry.jax import _policies

    def run_body(values):
        if isinstance(closed, core.Jaxpr):
            return eval_jaxpr(ctx, closed, [], list(values))
        return call_closed(ctx, closed, list(values), eqn)

    if ctx.policy_override:  # explain(): every checkpoint under one ferry policy, or none
        if ctx.override is None:
            return run_body(args)
        return F.checkpoint(run_body, list(args), ctx.override, bool(prevent_cse))
    if ctx.diff_depth == 0:
        return run_body(args)
    ferry_policy, jax_policy = _policies.ferry_policy(policy)

    def body(values):
        saved, ctx.policy = ctx.policy, jax_policy
        try:
            return run_body(values)
        finally:
            ctx.policy = saved

    return F.checkpoint(body, list(args), ferry_policy, bool(prevent_cse))


@rule("remat2", "checkpoint", "remat", higher_order=True)
def _remat(ctx, eqn, *args):
    p = eqn.params
    if p.get("differentiated", False):
        # JAX's own backward pass of a checkpoint: its recomputation and reloads, as JAX decided.
        body = p["jaxpr"]
        return eval_jaxpr(ctx, body, [], list(args)) if isinstance(body, core.Jaxpr) else call_closed(
            ctx, body, list(args), eqn)
    return _checkpoint(ctx, eqn, p["jaxpr"], p.get("policy"), p.get("prevent_cse", True), args)


@rule("call_hi_primitive", higher_order=True)
def _call_hi(ctx, eqn, *args):
    prim = eqn.params["_prim"]
    kind = type(prim).__name__
    if kind == "RematTraced":  # jax_remat3's checkpoint
        return _checkpoint(ctx, eqn, prim.params["jaxpr"], prim.params["policy"], True, args)
    if kind == "CheckpointName":  # jax_remat3's checkpoint_name
        (x,) = args
        return [_name_tensor(ctx, eqn, x, prim.params["name"])]
    # Any other high-level primitive: JAX's own expansion into low-level primitives.
    avals = [v.aval for v in eqn.invars]
    closed = jax.make_jaxpr(lambda *xs: jax.tree_util.tree_leaves(prim.expand(
        *jax.tree_util.tree_unflatten(prim.in_tree, xs))))(*[jax.ShapeDtypeStruct(a.shape, a.dtype) for a in avals])
    return call_closed(ctx, closed, list(args), eqn)


def _name_tensor(ctx, eqn, x, name):
    from ferry.jax import _policies
    return _policies.name(ctx, eqn, x, name)


@rule("name")
def _name(ctx, eqn, x):
    return _name_tensor(ctx, eqn, x, eqn.params["name"])


def _kind_of(dst):
    """The ferry memory kind a device_put destination names: a MemorySpace, a memory-kind string, a
    Sharding with a memory_kind, a Device (the device), or None (where the value is)."""
    if dst is None:
        return None
    s = str(dst)
    if "MemorySpace.Host" in s:
        return "pinned_host"
    if "MemorySpace.Device" in s:
        return "device"
    kind = dst if isinstance(dst, str) else getattr(dst, "memory_kind", None)
    if kind is None:
        return "device" if hasattr(dst, "platform") or hasattr(dst, "device_set") else None
    return {"pinned_host": "pinned_host", "unpinned_host": "unpinned_host", "device": "device",
            "tpu_hbm": "device", "hbm": "device"}.get(kind)


@rule("device_put")
def _device_put(ctx, eqn, *xs):
    devices = eqn.params.get("devices") or (None,) * len(xs)
    outs = []
    for x, dst, var in zip(xs, devices, eqn.invars):
        kind = _kind_of(dst)
        if kind is None:
            if dst is not None:
                raise unimplemented(f"device_put to {dst} at {where(eqn)}")
            outs.append(x)
            continue
        if kind == x.memory_kind:
            if kind == "device":
                what = var.aval.str_short() if hasattr(var.aval, "str_short") else str(var.aval)
                ctx.warn(f"device_put of {what} at {where(eqn)} copies a value that is on the device to the "
                         "device: it offloads nothing (a policy's Offloadable(dst='unpinned_host') becomes this "
                         "after jax.grad; use dst='pinned_host', or ferry.jax.grad, for which unpinned_host is "
                         "host memory)")
            outs.append(x)
        else:
            outs.append(F.device_put(x, kind))
    return outs


@rule("debug_callback")
def _debug_callback(ctx, eqn, *xs):
    ctx.warn(f"jax.debug callback at {where(eqn)} was left out: ferry runs no Python during a compiled call")
    return []


# Custom derivatives.

def _eqn_fn(eqn):
    """A function of the equation's inputs that evaluates the equation with JAX."""
    fresh_in = [core.Var(v.aval) for v in eqn.invars]
    fresh_out = [core.Var(v.aval) for v in eqn.outvars]
    one = core.Jaxpr(constvars=[], invars=fresh_in,
                     outvars=fresh_out, eqns=[eqn.replace(invars=fresh_in, outvars=fresh_out)],
                     effects=eqn.effects)

    def run(*xs):
        return core.eval_jaxpr(one, [], *xs)
    return run


def _custom(ctx, eqn, args, body):
    if ctx.diff_depth == 0:
        return call_closed(ctx, body, list(args), eqn)
    # JAX's vjp of the equation (its custom rule): the forward gives the outputs and the residuals,
    # the backward the cotangents from them; both traced by JAX, interpreted by ferry.
    run = _eqn_fn(eqn)
    avals = [v.aval for v in eqn.invars]
    shapes = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in avals]
    store = {}

    def fwd(*xs):
        out, pullback = jax.vjp(run, *xs)
        leaves, tree = jax.tree_util.tree_flatten(pullback)
        store["tree"] = tree
        return out, leaves

    fwd_closed = jax.make_jaxpr(fwd)(*shapes)
    n_out = len(eqn.outvars)
    res_avals = fwd_closed.out_avals[n_out:]

    zeros_for = [i for i, a in enumerate(avals) if not np.issubdtype(a.dtype, np.inexact)]

    def bwd(res, cts):
        pullback = jax.tree_util.tree_unflatten(store["tree"], res)
        return [g for i, g in enumerate(pullback(list(cts))) if i not in zeros_for]

    out_shapes = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in eqn.outvars]
    bwd_closed = jax.make_jaxpr(bwd)([jax.ShapeDtypeStruct(a.shape, a.dtype) for a in res_avals], out_shapes)

    def f_body(values):
        return call_closed(ctx, body, list(values), eqn)

    def jax_differentiated(closed, values):
        # These jaxprs are JAX's own differentiation: custom rules inside them run as their bodies.
        saved, ctx.diff_depth = ctx.diff_depth, 0
        try:
            return call_closed(ctx, closed, list(values), eqn)
        finally:
            ctx.diff_depth = saved

    def f_fwd(values):
        outs = jax_differentiated(fwd_closed, values)
        return [outs[:n_out], outs[n_out:]]

    def f_bwd(res, cts):
        cts = [c if c is not None else _zeros(v.aval) for c, v in zip(cts, eqn.outvars)]
        grads = iter(jax_differentiated(bwd_closed, list(res) + list(cts)))
        return [None if i in zeros_for else next(grads) for i in range(len(avals))]

    return F.custom_vjp(f_body, f_fwd, f_bwd, list(args))


def _zeros(aval):
    s = spec(aval)
    return F.broadcast_in_dim(F.constant(0.0, [], s[1]), list(s[0]), [])


@rule("custom_jvp_call", higher_order=True)
def _custom_jvp(ctx, eqn, *args):
    return _custom(ctx, eqn, args, eqn.params["call_jaxpr"])


@rule("custom_vjp_call", "custom_vjp_call_jaxpr", higher_order=True)
def _custom_vjp(ctx, eqn, *args):
    body = eqn.params.get("call_jaxpr") or eqn.params.get("fun_jaxpr")
    return _custom(ctx, eqn, args, body)


# Random keys: JAX's implementation of the key's PRNG, traced on the key data.

def _impl_of(aval):
    return aval.dtype._impl


def _physical(ctx, eqn, fn, args, in_avals):
    shapes = [jax.ShapeDtypeStruct(physical_shape(a), np.uint32 if is_key(a) else a.dtype) for a in in_avals]
    closed = jax.make_jaxpr(fn)(*shapes)
    return call_closed(ctx, closed, list(args), eqn)


@rule("random_bits")
def _random_bits(ctx, eqn, keys):
    aval = eqn.invars[0].aval
    p = eqn.params
    fn = lambda k: prng.random_bits_impl_base(_impl_of(aval), k, aval.ndim, bit_width=p["bit_width"],
                                               shape=p["shape"])
    if p["bit_width"] != 32:
        raise unimplemented(f"random_bits of {p['bit_width']} bits at {where(eqn)} (ferry draws 32-bit words)")
    return _physical(ctx, eqn, fn, [keys], [aval])[0]


@rule("random_split")
def _random_split(ctx, eqn, keys):
    aval = eqn.invars[0].aval
    fn = lambda k: prng.random_split_impl_base(_impl_of(aval), k, aval.ndim, shape=eqn.params["shape"])
    return _physical(ctx, eqn, fn, [keys], [aval])[0]


@rule("random_fold_in")
def _random_fold_in(ctx, eqn, keys, msgs):
    aval, maval = eqn.invars[0].aval, eqn.invars[1].aval
    fn = lambda k, m: prng.random_fold_in_impl_base(_impl_of(aval), k, m, aval.shape)
    return _physical(ctx, eqn, fn, [keys, msgs], [aval, maval])[0]


@rule("random_seed")
def _random_seed(ctx, eqn, seeds):
    impl = eqn.params["impl"]
    aval = eqn.invars[0].aval
    fn = lambda s: prng.random_seed_impl_base(s, impl=impl)
    return _physical(ctx, eqn, fn, [seeds], [aval])[0]


@rule("random_wrap", "random_unwrap")
def _random_wrap(ctx, eqn, x):
    return x


__all__ = ["Context", "spec"]


@rule("ferry_vjp", higher_order=True)
def _ferry_vjp(ctx, eqn, *operands):
    """ferry.jax.grad / value_and_grad / vjp: ferry's vjp of the converted function."""
    p = eqn.params
    n = p["n_primals"]
    primals, cts = operands[:n], list(operands[n:])
    jaxpr = p["jaxpr"]

    def fn(values):
        return eval_jaxpr(ctx, jaxpr, [], list(values))

    ctx.diff_depth += 1
    try:
        outs, pullback = F.vjp(fn, list(primals))
    finally:
        ctx.diff_depth -= 1
    it = iter(cts)
    full = [next(it) if m else None for m in p["ct_mask"]]
    grads = pullback(full)
    result = list(outs)
    for g, d, aval in zip(grads, p["diff"], [v.aval for v in eqn.invars[:n]]):
        if d:
            result.append(g if g is not None else _zeros(aval))
    return result
