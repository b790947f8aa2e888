"""jax.shard_map and jax.lax's collectives on ferry's processes.

ferry runs one shard per process (ferry.distributed): a shard_map's mesh axis of size
process_count() is the processes, and an axis of size 1 is no exchange at all. The arguments and
results of ferry.jax.jit are whole (global) arrays on every process, as jax.jit's are from a single
controller: an input sharded by its in_spec is this process's block of the argument (sliced at
axis_index), and an output sharded by its out_spec is gathered from every process, so that each
process returns what jax.jit returns on a mesh of process_count() devices. An argument used only
as such a sharded operand reaches the program as this process's block (local_inputs: the call
slices it), so the plan holds 1/N of it.

Inside the body, psum / pmean (psum_invariant then a division) / all_gather / psum_scatter
(reduce_scatter) / axis_index over the processes' axis are ferry's collectives under the axis name
given to ferry.distributed.initialize(). Where ferry differentiates (ferry.jax.grad inside
ferry.jax.jit) the derivatives are JAX's under check_vma: pvary (a replicated value used by a
varying computation) transposes to psum, psum_invariant to the identity, the slicing of a sharded
input to an all_gather of its cotangent and the gathering of an output to the slicing of its
cotangent, so that ferry.jax.grad of a shard_map gives what jax.grad gives.
"""
import numpy as np

from ferry import _ferry as F
from ferry._errors import Error, invalid_argument, unimplemented
from ferry.jax._interpreter import call_closed, eval_jaxpr, physical_shape, rule, scalar

# How to launch, for the messages that need it.
_LAUNCH = ("launch one process per shard (`mpirun -np N python program.py`) and call "
           "ferry.distributed.initialize() before the first call")


def _names(axes):
    """The axis names of a collective's parameter (a name or a tuple of names)."""
    names = axes if isinstance(axes, (tuple, list)) else (axes,)
    for n in names:
        if not isinstance(n, str):
            raise unimplemented(f"a collective over the positional axis {n!r} (jax.vmap's or pmap's); ferry "
                                "converts collectives over a jax.shard_map mesh axis")
    return tuple(names)


def _over_processes(ctx, axes):
    """Whether a collective over `axes` exchanges between the processes (False: every axis named
    has size 1). An axis no enclosing shard_map binds is refused."""
    sizes = ctx.mesh_axes
    exchanges = False
    for n in _names(axes):
        if n not in sizes:
            raise invalid_argument(f"the axis name {n!r} is not bound by an enclosing jax.shard_map; ferry "
                                   "converts collectives inside jax.shard_map only")
        exchanges = exchanges or sizes[n] > 1
    return exchanges


def _axis():
    return F.axis_name()


def _with_vjp(ctx, forward, backward, x):
    """forward(x), whose cotangent is backward(ct) where ferry differentiates."""
    if ctx.diff_depth == 0:
        return forward(x)

    def bwd(res, cts):
        return [None if cts[0] is None else backward(cts[0])]
    return F.custom_vjp(lambda xs: [forward(xs[0])], lambda xs: [[forward(xs[0])], []], bwd, [x])[0]


def _each(eqn, xs, fn):
    outs = [fn(x) for x in xs]
    return outs if eqn.primitive.multiple_results else outs[0]


@rule("psum_invariant")
def _psum_invariant(ctx, eqn, *xs):
    if not _over_processes(ctx, eqn.params["axes"]):
        return _each(eqn, xs, lambda x: x)
    return _each(eqn, xs, lambda x: _with_vjp(ctx, lambda v: F.psum(v, _axis()), lambda ct: ct, x))


@rule("psum")
def _psum(ctx, eqn, *xs):
    # Without check_vma: ferry's psum, whose VJP is psum (as under jax.pmap).
    if not _over_processes(ctx, eqn.params["axes"]):
        return _each(eqn, xs, lambda x: x)
    return _each(eqn, xs, lambda x: F.psum(x, _axis()))


@rule("pvary")
def _pvary(ctx, eqn, *xs):
    # A value every process holds alike, used where values differ: no data move; its cotangent is
    # the sum of every process's.
    if not _over_processes(ctx, eqn.params["axes"]):
        return _each(eqn, xs, lambda x: x)
    return _each(eqn, xs, lambda x: _with_vjp(ctx, lambda v: v, lambda ct: F.psum(ct, _axis()), x))


def _insert_one(x, dimension):
    shape = list(x.shape)
    shape.insert(dimension, 1)
    return F.reshape(x, shape)


def _drop_one(x, dimension):
    shape = list(x.shape)
    del shape[dimension]
    return F.reshape(x, shape)


def _check_groups(eqn):
    if eqn.params.get("axis_index_groups") is not None:
        raise unimplemented("a collective with axis_index_groups; ferry's collectives run over all the processes")


def _gather(ctx, eqn, x):
    """all_gather's dimension and tiling, and its result where no process exchanges (None where
    they do)."""
    _check_groups(eqn)
    p = eqn.params
    d, tiled = p["all_gather_dimension"], p["tiled"]
    if _over_processes(ctx, p["axis_name"]):
        return d, tiled, None
    return d, tiled, x if tiled else _insert_one(x, d)


@rule("all_gather")
def _all_gather(ctx, eqn, x):
    d, tiled, local = _gather(ctx, eqn, x)
    return local if local is not None else F.all_gather(x, _axis(), d, tiled)


@rule("all_gather_invariant")
def _all_gather_invariant(ctx, eqn, x):
    # The same exchange; every process holds the result, so its cotangent is this process's block.
    d, tiled, local = _gather(ctx, eqn, x)
    if local is not None:
        return local
    block = list(physical_shape(eqn.invars[0].aval))

    def backward(ct):
        if tiled:
            return _block(ct, d, block[d])
        return _drop_one(_block(ct, d, 1), d)
    return _with_vjp(ctx, lambda v: F.all_gather(v, _axis(), d, tiled), backward, x)


@rule("reduce_scatter")
def _reduce_scatter(ctx, eqn, x):
    _check_groups(eqn)
    p = eqn.params
    d, tiled = p["scatter_dimension"], p["tiled"]
    if not _over_processes(ctx, p["axis_name"]):
        return x if tiled else _drop_one(x, d)
    return F.psum_scatter(x, _axis(), d, tiled)


@rule("axis_index")
def _axis_index(ctx, eqn):
    if not _over_processes(ctx, eqn.params["axis_name"]):
        return scalar(0, "i32")
    return F.axis_index(_axis())


def _block(x, dimension, size):
    """This process's block of x along `dimension`: `size` elements from axis_index * size."""
    zero = scalar(0, "i32")
    start = F.mul(F.axis_index(_axis()), scalar(size, "i32"))
    starts = [start if i == dimension else zero for i in range(len(x.shape))]
    sizes = list(x.shape)
    sizes[dimension] = size
    return F.dynamic_slice(x, starts, sizes)


def _sharded_dimension(global_shape, local_shape, n, what):
    """The dimension a shard_map splits over the processes (None where it splits none)."""
    dims = [i for i, (g, l) in enumerate(zip(global_shape, local_shape)) if g != l]
    if not dims:
        return None
    if len(dims) > 1 or global_shape[dims[0]] != n * local_shape[dims[0]]:
        raise unimplemented(f"a jax.shard_map {what} of shape {list(global_shape)} split as {list(local_shape)}; "
                            f"ferry splits one dimension over the {n} processes")
    return dims[0]


def _mesh_sizes(mesh, manual):
    """The mesh's axes as ferry runs them: each of size 1, or of size process_count() (at most one
    such axis: it is the processes)."""
    n = F.process_count()
    sizes = dict(mesh.shape)
    over = [a for a, s in sizes.items() if s > 1]
    for a in over:
        if manual is not None and a not in manual:
            raise unimplemented(f"jax.shard_map leaves the mesh axis {a!r} (size {sizes[a]}) to the compiler "
                                "(an auto axis); ferry runs shard_map with every axis of size > 1 manual")
    if len(over) > 1:
        raise unimplemented(f"jax.shard_map over the mesh axes {over} (sizes {[sizes[a] for a in over]}); ferry "
                            "runs one shard per process, over one mesh axis of size process_count()")
    if over and sizes[over[0]] != n:
        a = over[0]
        raise invalid_argument(
            f"jax.shard_map over the mesh axis {a!r} of size {sizes[a]}, but ferry runs one shard per process "
            f"and this launch has {n} process{'es' if n != 1 else ''}"
            + ("" if F.is_initialized() else " (ferry.distributed.initialize() was not called)")
            + f"; {_LAUNCH}, with N = {sizes[a]}")
    return sizes, (sizes[over[0]] if over else 1)


def _inner(body):
    """A shard_map's body as a Jaxpr (its parameter may be a ClosedJaxpr)."""
    return body.jaxpr if hasattr(body, "jaxpr") and hasattr(body, "consts") else body


def local_inputs(closed):
    """The inputs of a traced function that reach the program as this process's block: those whose
    every use is as a jax.shard_map operand split over the processes along one dimension (the same
    one each time). {input index: (dimension, block shape)}; empty in a launch of one process."""
    n = F.process_count()
    if n == 1:
        return {}
    jaxpr = closed.jaxpr
    outs = {id(v) for v in jaxpr.outvars}
    found = {}
    for i, v in enumerate(jaxpr.invars):
        if id(v) in outs:
            continue
        split = None
        for eqn in jaxpr.eqns:
            for j, u in enumerate(eqn.invars):
                if u is not v:
                    continue
                if eqn.primitive.name != "shard_map" or split is False:
                    split = False
                    break
                l = physical_shape(_inner(eqn.params["jaxpr"]).invars[j].aval)
                try:
                    d = _sharded_dimension(physical_shape(v.aval), l, n, "argument")
                except Error:  # converting the shard_map says why
                    d = None
                this = (d, tuple(l)) if d is not None else False
                split = this if split in (None, this) else False
            if split is False:
                break
        if split:
            found[i] = split
    return found


def take_block(x, dimension, size):
    """This process's block of a whole argument along `dimension` (a NumPy copy, contiguous)."""
    start = F.process_index() * size
    index = (slice(None),) * dimension + (slice(start, start + size),)
    return np.ascontiguousarray(np.asarray(x)[index])


@rule("shard_map", higher_order=True)
def _shard_map(ctx, eqn, *args):
    p = eqn.params
    manual = p.get("manual_axes", p.get("newly_manual_axes"))
    sizes, n = _mesh_sizes(p["mesh"], manual)
    body = p["jaxpr"]
    inner = _inner(body)
    locals_ = []
    for x, outer_var, inner_var in zip(args, eqn.invars, inner.invars):
        g, l = physical_shape(outer_var.aval), physical_shape(inner_var.aval)
        d = _sharded_dimension(g, l, n, "argument")
        if d is None or any(outer_var is v for v in ctx.local_vars):  # whole, or an argument taken as its block
            locals_.append(x)
        else:
            size = l[d]
            locals_.append(_with_vjp(ctx, lambda v, d=d, size=size: _block(v, d, size),
                                     lambda ct, d=d: F.all_gather(ct, _axis(), d, True), x))
    saved = ctx.mesh_axes
    ctx.mesh_axes = {**saved, **sizes}
    try:
        if inner is body:
            outs = eval_jaxpr(ctx, body, [], locals_)
        else:
            outs = call_closed(ctx, body, locals_, eqn)
    finally:
        ctx.mesh_axes = saved
    results = []
    for y, inner_var, outer_var in zip(outs, inner.outvars, eqn.outvars):
        l, g = physical_shape(inner_var.aval), physical_shape(outer_var.aval)
        d = _sharded_dimension(g, l, n, "result")
        if d is None:
            results.append(y)
        else:
            size = l[d]
            results.append(_with_vjp(ctx, lambda v, d=d: F.all_gather(v, _axis(), d, True),
                                     lambda ct, d=d, size=size: _block(ct, d, size), y))
    return results

