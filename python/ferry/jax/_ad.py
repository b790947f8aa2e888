"""ferry.jax.grad, value_and_grad and vjp: ferry differentiates.

Inside ferry.jax.jit they bind one JAX primitive, ferry_vjp, that carries the jaxpr of the
function *before* differentiation (and cotangents for its outputs); the converter turns it into
ferry's vjp of the converted function, so ferry's autodiff, checkpoint partitioning and planner do
the work (the JAX policies of checkpoints inside are called per equation by the converter).
Outside ferry.jax.jit, and under any JAX transformation applied on top of them (vmap, jvp,
lowering by jax.jit), they are JAX's own functions: the primitive's rules compute with jax.vjp.
"""
import functools
import threading

import numpy as np

import jax
import jax.numpy as jnp
from jax._src import core
from jax._src.interpreters import ad, batching, mlir
from jax._src.interpreters import partial_eval as pe

_state = threading.local()


def inside_ferry():
    return getattr(_state, "depth", 0) > 0


class tracing_for_ferry:
    """While ferry.jax.jit traces a function with JAX: ferry.jax.grad and co. defer to ferry."""

    def __enter__(self):
        _state.depth = getattr(_state, "depth", 0) + 1

    def __exit__(self, *exc):
        _state.depth -= 1


ferry_vjp_p = core.Primitive("ferry_vjp")
ferry_vjp_p.multiple_results = True


def _split(operands, n_primals):
    return operands[:n_primals], operands[n_primals:]


def _jax_vjp(*operands, jaxpr, n_primals, diff, ct_mask):
    """The primitive's meaning in JAX: the outputs, and the cotangents of the differentiated primals."""
    primals, cts = _split(list(operands), n_primals)
    fn = core.jaxpr_as_fun(core.ClosedJaxpr(jaxpr, ()))
    diff_idx = [i for i, d in enumerate(diff) if d]

    def of_diff(*xs):
        full = list(primals)
        for i, x in zip(diff_idx, xs):
            full[i] = x
        return fn(*full)

    outs, pullback = jax.vjp(of_diff, *[primals[i] for i in diff_idx])
    it = iter(cts)
    full_cts = [next(it) if m else jnp.zeros_like(o) for m, o in zip(ct_mask, outs)]
    return list(outs) + list(pullback(full_cts))


@ferry_vjp_p.def_abstract_eval
def _abstract_eval(*avals, jaxpr, n_primals, diff, ct_mask):
    outs = [v.aval for v in jaxpr.outvars]
    grads = [core.ShapedArray(a.shape, a.dtype, weak_type=False) for a, d in zip(avals[:n_primals], diff) if d]
    return outs + grads


ferry_vjp_p.def_impl(_jax_vjp)
mlir.register_lowering(ferry_vjp_p, mlir.lower_fun(_jax_vjp, multiple_results=True))


def _jvp(primals, tangents, **params):
    tangents = [ad.instantiate_zeros(t) for t in tangents]
    return jax.jvp(functools.partial(_jax_vjp, **params), primals, tangents)


ad.primitive_jvps[ferry_vjp_p] = _jvp


def _batch(args, dims, **params):
    outs = jax.vmap(functools.partial(_jax_vjp, **params), in_axes=dims)(*args)
    return outs, [0] * len(outs)


batching.primitive_batchers[ferry_vjp_p] = _batch


def _trace_flat(fun, args, kwargs):
    """The closed jaxpr of fun on the flattened (args, kwargs), with its output structure."""
    leaves, in_tree = jax.tree_util.tree_flatten((args, kwargs))
    store = {}

    def flat_fun(*flat):
        a, kw = jax.tree_util.tree_unflatten(in_tree, flat)
        out = fun(*a, **kw)
        out_leaves, store["tree"] = jax.tree_util.tree_flatten(out)
        return out_leaves

    closed = jax.make_jaxpr(flat_fun)(*leaves)
    return closed, leaves, store["tree"]


def _bind(closed, leaves, diff, cts, ct_mask):
    jaxpr = pe.convert_constvars_jaxpr(closed.jaxpr)
    consts = list(closed.consts)
    diff = (False,) * len(consts) + tuple(diff)
    return ferry_vjp_p.bind(*consts, *leaves, *cts, jaxpr=jaxpr, n_primals=len(consts) + len(leaves),
                            diff=diff, ct_mask=tuple(ct_mask))


def _argnums_tuple(argnums, n_args):
    t = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for a in t:
        if not isinstance(a, (int, np.integer)) or not -n_args <= a < n_args:
            raise ValueError(f"differentiating with respect to argnums={argnums} requires at least "
                             f"{max(t) + 1 if t else 1} positional arguments to be passed by the caller, "
                             f"but got only {n_args} positional arguments.")
    return tuple(a % n_args for a in t)


def _diff_mask(args, kwargs, argnums):
    mask = []
    for i, a in enumerate(args):
        n = len(jax.tree_util.tree_leaves(a))
        mask += [i in argnums] * n
    mask += [False] * len(jax.tree_util.tree_leaves(kwargs))
    return mask


def _check_inputs(avals, mask, what):
    for a, d in zip(avals, mask):
        if d and not jnp.issubdtype(a.dtype, jnp.inexact):
            raise TypeError(f"{what} requires real- or complex-valued inputs (input dtype that is a sub-dtype "
                            f"of np.inexact), but got {a.dtype.name}. If you want to use Boolean- or "
                            "integer-valued inputs, use vjp or set allow_int to True.")


def value_and_grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False, reduce_axes=()):
    """jax.value_and_grad; inside ferry.jax.jit, ferry differentiates `fun`."""
    jax_fn = jax.value_and_grad(fun, argnums, has_aux=has_aux, holomorphic=holomorphic, allow_int=allow_int)

    @functools.wraps(fun)
    def value_and_grad_f(*args, **kwargs):
        if not inside_ferry() or holomorphic or allow_int:
            return jax_fn(*args, **kwargs)
        nums = _argnums_tuple(argnums, len(args))
        closed, leaves, out_tree = _trace_flat(fun, args, kwargs)
        out_avals = closed.out_avals
        if has_aux:
            children = out_tree.children()
            if len(children) != 2:
                raise TypeError("value_and_grad with has_aux=True requires fun to return a pair (value, aux)")
            value_tree, aux_tree = children
            if value_tree.num_leaves != 1:
                raise TypeError("Gradient only defined for scalar-output functions.")
        elif out_tree.num_leaves != 1:
            raise TypeError(f"Gradient only defined for scalar-output functions. Output was {out_tree}.")
        value_aval = out_avals[0]
        if value_aval.shape != ():
            raise TypeError("Gradient only defined for scalar-output functions. Output had shape: "
                            f"{value_aval.shape}.")
        if not jnp.issubdtype(value_aval.dtype, jnp.floating):
            raise TypeError(f"grad requires real-valued outputs (output dtype that is a sub-dtype of np.floating), "
                            f"but got {value_aval.dtype.name}. For holomorphic differentiation, pass "
                            "holomorphic=True. For differentiation of non-holomorphic functions involving complex "
                            "outputs, use jax.vjp directly.")
        mask = _diff_mask(args, kwargs, nums)
        _check_inputs([core.typeof(x) for x in leaves], mask, "grad")
        one = jnp.ones((), value_aval.dtype)
        ct_mask = [True] + [False] * (len(out_avals) - 1)
        outs = _bind(closed, leaves, mask, [one], ct_mask)
        n_out = len(out_avals)
        out = jax.tree_util.tree_unflatten(out_tree, outs[:n_out])
        grads = iter(outs[n_out:])
        per_arg = []
        for i in nums:
            tree = jax.tree_util.tree_structure(args[i])
            per_arg.append(jax.tree_util.tree_unflatten(tree, [next(grads) for _ in range(tree.num_leaves)]))
        g = per_arg[0] if isinstance(argnums, int) else tuple(per_arg)
        return (out, g)

    return value_and_grad_f


def grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False, reduce_axes=()):
    """jax.grad; inside ferry.jax.jit, ferry differentiates `fun`."""
    vg = value_and_grad(fun, argnums, has_aux=has_aux, holomorphic=holomorphic, allow_int=allow_int)

    @functools.wraps(fun)
    def grad_f(*args, **kwargs):
        (value, g) = vg(*args, **kwargs)
        if has_aux:
            return g, value[1]
        return g

    return grad_f


def vjp(fun, *primals, has_aux=False, reduce_axes=()):
    """jax.vjp; inside ferry.jax.jit, the returned function's cotangents are ferry's."""
    if not inside_ferry():
        return jax.vjp(fun, *primals, has_aux=has_aux)
    closed, leaves, out_tree = _trace_flat(fun, primals, {})
    outs_flat = core.jaxpr_as_fun(closed)(*leaves)
    out = jax.tree_util.tree_unflatten(out_tree, outs_flat)
    if has_aux:
        value_tree, _ = out_tree.children()
        n_value = value_tree.num_leaves
        primal_out, aux = out
    else:
        n_value = out_tree.num_leaves
        primal_out = out
    mask = [jnp.issubdtype(core.typeof(x).dtype, jnp.inexact) for x in leaves]

    def vjp_fn(ct):
        ct_leaves = jax.tree_util.tree_leaves(ct)
        if len(ct_leaves) != n_value:
            raise ValueError(f"unexpected tree structure of argument to vjp function: got {ct}, expected "
                             "a cotangent of the primal output's structure")
        n_out = out_tree.num_leaves
        ct_mask = [True] * n_value + [False] * (n_out - n_value)
        outs = _bind(closed, leaves, mask, ct_leaves, ct_mask)
        grads = iter(outs[n_out:])
        flat = [next(grads) if m else np.zeros(core.typeof(x).shape, jax.dtypes.float0)
                for m, x in zip(mask, leaves)]
        return tuple(jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(p), [
            flat.pop(0) for _ in range(len(jax.tree_util.tree_leaves(p)))]) for p in primals)

    return (primal_out, vjp_fn, aux) if has_aux else (primal_out, vjp_fn)
