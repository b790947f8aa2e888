"""ferry.jax.jit: jax.jit's calling convention, ferry's compiler and runtime.

A call flattens its arguments, looks up the program compiled for their signature (pytree
structure, shapes, dtypes, weak types, static values) and runs it; a miss traces the function with
JAX (jax.jit(...).trace, so static_argnums, static_argnames and donate_argnums mean what they mean
in JAX, errors included), converts the jaxpr (_interpreter.py), compiles it and keeps it.
Results come back in the function's output structure as NumPy arrays over ferry's result buffers
(no copy); passing them back in (the next training step) hands ferry its own buffers, which
donate_argnums may then reuse.
"""
import functools
import re

import numpy as np

import jax
from jax._src import api_util
from jax._src import core
from jax._src import dtypes as jdtypes

from ferry import _ferry as F
from ferry._errors import Error, invalid_argument
from ferry.jax import _ad, _collectives
from ferry.jax._interpreter import ferry_dtype, is_key, is_unsigned, to_program

_NAME_CODE = re.compile(r"@jax:(save|offload:[a-z_]+:[a-z_]+)")


def _clean(messages):
    """Warnings name values as the user named them (without the decision the converter encodes)."""
    return [_NAME_CODE.sub("", m) for m in messages]


def _type_num(aval):
    if is_key(aval) or is_unsigned(aval):
        return F.NPY_UINT32
    return F.numpy_type_num(ferry_dtype(aval))


def _leaf_signature(x):
    t = type(x)
    if t is np.ndarray:
        return (x.shape, x.dtype)
    if isinstance(x, jax.Array):
        return (x.shape, x.dtype, getattr(x, "weak_type", False))
    if t in (float, int, bool, complex):
        return t
    return (type(x), np.shape(x), np.result_type(x))


def _to_key_data(x):
    return np.asarray(jax.random.key_data(x))


def _converter(leaf, aval):
    """How a leaf of this kind becomes the array the program takes (None: as it is)."""
    if is_key(aval):
        return _to_key_data
    want = np.dtype(aval.dtype)
    if isinstance(leaf, np.ndarray) and leaf.dtype == want:
        return None
    if isinstance(leaf, jax.Array) and leaf.dtype == want:
        return None
    return lambda x: np.asarray(x, dtype=want)


class Compiled:
    """A program ferry compiled for one signature: call it with arguments of that signature."""

    def __init__(self, jitted, traced, lowered, compiled, constants, warnings, donated, local):
        self._jitted = jitted
        self._local = local  # arguments the program takes as this process's block
        self._compiled = compiled
        self._lowered = lowered
        self._in_tree = traced.in_tree
        self._out_tree = traced.out_tree
        self._out_avals = traced.jaxpr.out_avals
        in_avals = traced.jaxpr.in_avals
        self._in_avals = in_avals
        self._warnings = warnings
        self._runner = F.Runner(compiled, [_type_num(a) for a in in_avals],
                                [_type_num(a) for a in self._out_avals], list(donated), constants)
        self._converters = None
        self._key_outputs = [(i, a) for i, a in enumerate(self._out_avals) if is_key(a)]

    def _converters_for(self, leaves):
        conv = [_converter(x, a) for x, a in zip(leaves, self._in_avals)]
        for i, (d, block) in self._local.items():  # this process's block of a whole argument
            c = conv[i]
            conv[i] = (lambda x, c=c, d=d, size=block[d]:
                       _collectives.take_block(c(x) if c else x, d, size))
        return conv

    # The cached-call path: flat leaves in, the output structure out.
    def _call_flat(self, leaves):
        conv = self._converters
        if conv is None:
            conv = self._converters = self._converters_for(leaves)
        if any(conv):
            leaves = [c(x) if c else x for c, x in zip(conv, leaves)]
        outs = self._runner(leaves)
        for i, aval in self._key_outputs:
            outs[i] = jax.random.wrap_key_data(outs[i], impl=aval.dtype._impl)
        return self._out_tree.unflatten(outs)

    def __call__(self, *args, **kwargs):
        dyn_args, dyn_kwargs = self._jitted._dynamic(args, kwargs, for_compiled=True)
        leaves, tree = jax.tree_util.tree_flatten((dyn_args, dyn_kwargs))
        if tree != self._in_tree:
            raise TypeError(f"function compiled for {self._in_tree}, called with {tree}")
        for i, (x, a) in enumerate(zip(leaves, self._in_avals)):
            xa = core.typeof(x) if not isinstance(x, np.ndarray) else None
            shape, dtype = (x.shape, x.dtype) if isinstance(x, np.ndarray) else (xa.shape, xa.dtype)
            if tuple(shape) != tuple(a.shape) or (dtype != a.dtype and not isinstance(x, (int, float, bool))):
                raise Error(f"argument {i} is {np.dtype(dtype) if not is_key(a) else dtype}{list(shape)}, but the "
                            f"program was compiled for {a.str_short()} (ferry converts no dtype: call "
                            "ferry.jax.jit's function, which compiles for each signature, or convert the "
                            "argument)", "INVALID_ARGUMENT")
        return self._call_flat(leaves)

    def as_text(self):
        """The program that runs (ferry IR, after the compiler's passes)."""
        return self._compiled.as_text()

    def memory_analysis(self):
        """The plan's memory (JAX's CompiledMemoryStats field names, plus peak_memory_in_bytes)."""
        return self._compiled.memory_analysis()

    def memory_report(self):
        return self._compiled.memory_report()

    def memory_html(self):
        """The plan drawn as one self-contained HTML page: device and host memory over the schedule
        as stacked live ranges coloured by what each buffer is, the peak and the buffers live at it,
        the copies each way, and the last run_traced() run beside the plan."""
        return self._compiled.memory_html()

    def save_memory_html(self, path):
        """memory_html() written to path."""
        self._compiled.save_memory_html(str(path))

    def _repr_html_(self):
        # A notebook shows the page inline, in an iframe of its own.
        return F.inline_page(self._compiled.memory_html())

    def cost_analysis(self):
        """The work by ferry's cost model: a dict that also reads as attributes."""
        c = self._compiled.cost_analysis()
        return CostAnalysis(flops=c.flops, recompute_flops=c.recompute_flops, bytes_to_host=c.bytes_to_host,
                            bytes_to_device=c.bytes_to_device, estimated_seconds=c.estimated_seconds,
                            exposed_copy_seconds=c.exposed_copy_seconds, bytes_exchanged=c.bytes_exchanged,
                            exposed_collective_seconds=c.exposed_collective_seconds)

    def execution_stats(self):
        """What the most recent run measured (zeros before the first run)."""
        return self._compiled.execution_stats()

    def warnings(self):
        """Decisions that had no effect, in words."""
        return _clean(self._warnings + self._lowered.warnings())

    def run_traced(self, trace_path, *args, **kwargs):
        """Runs once and writes a Chrome/Perfetto timeline of the run (compute and copy lanes, live
        bytes per memory kind) to trace_path; returns the results."""
        dyn_args, dyn_kwargs = self._jitted._dynamic(args, kwargs, for_compiled=True)
        leaves = jax.tree_util.tree_leaves((dyn_args, dyn_kwargs))
        conv = self._converters_for(leaves)
        leaves = [c(x) if c else x for c, x in zip(conv, leaves)]
        return self._out_tree.unflatten(self._runner(leaves, trace_path))

    timeline = run_traced


class CostAnalysis(dict):
    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class Lowered:
    """A traced and converted program: as_text() is ferry IR; compile() makes it runnable."""

    def __init__(self, jitted, traced, lowered, constants, warnings, donated, local):
        self._jitted = jitted
        self._traced = traced
        self._lowered = lowered
        self._constants = constants
        self._warnings = warnings
        self._donated = donated
        self._local = local

    def as_text(self, dialect=None, **kwargs):
        return self._lowered.as_text()

    def warnings(self):
        return _clean(self._warnings + self._lowered.warnings())

    def compile(self, compiler_options=None, *, device_memory_limit=None, fit_to_limit=None, backend=None,
                checked=False):
        j = self._jitted
        opts = dict(compiler_options or {})
        limit = device_memory_limit if device_memory_limit is not None else opts.get(
            "device_memory_limit", j._device_memory_limit)
        fit = fit_to_limit if fit_to_limit is not None else opts.get("fit_to_limit", j._fit_to_limit)
        be = backend if backend is not None else opts.get("backend", j._backend)
        compiled = self._lowered.compile(int(limit), bool(fit), str(be), bool(checked))
        return Compiled(j, self._traced, self._lowered, compiled, self._constants, self._warnings, self._donated,
                        self._local)

    @property
    def in_tree(self):
        return self._traced.in_tree

    @property
    def out_info(self):
        return self._traced.out_info


class Jitted:
    """What ferry.jax.jit returns: call it as the jax.jit-ed function, or lower(...).compile()."""

    def __init__(self, fun, static_argnums, static_argnames, donate_argnums, device_memory_limit, fit_to_limit,
                 backend):
        if not callable(fun):
            raise TypeError(f"Expected a callable value, got {fun}")
        if not isinstance(device_memory_limit, (int, np.integer)) or isinstance(device_memory_limit, bool) or \
                device_memory_limit < 0:
            raise invalid_argument(f"device_memory_limit must be a number of bytes >= 0 (0: no limit), not "
                                   f"{device_memory_limit!r}")
        if backend not in ("cpu", "cuda"):
            raise invalid_argument(f"backend must be 'cpu' or 'cuda', not {backend!r}")
        self._fun = fun
        self._device_memory_limit = int(device_memory_limit)
        self._fit_to_limit = bool(fit_to_limit)
        self._backend = backend
        sig = api_util.fun_signature(fun)
        nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums or ())
        names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames or ())
        if sig is not None:
            nums, names = api_util.infer_argnums_and_argnames(sig, nums, names)
        self._static_argnums = frozenset(nums)
        self._static_argnames = frozenset(names)
        self._jax = jax.jit(fun, static_argnums=static_argnums, static_argnames=static_argnames,
                            donate_argnums=donate_argnums)
        self._cache = {}
        self._fast = not self._static_argnums and not self._static_argnames
        functools.update_wrapper(self, fun)

    def _dynamic(self, args, kwargs, for_compiled=False):
        if self._fast:
            return args, kwargs
        n = len(args)
        dyn_args = tuple(a for i, a in enumerate(args) if i not in self._static_argnums and i - n not in
                         self._static_argnums)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self._static_argnames}
        return dyn_args, dyn_kwargs

    def _key(self, args, kwargs):
        if self._fast and not kwargs:
            leaves, tree = jax.tree_util.tree_flatten(args)
            return (tree, *map(_leaf_signature, leaves)), leaves
        dyn_args, dyn_kwargs = self._dynamic(args, kwargs)
        leaves, tree = jax.tree_util.tree_flatten((dyn_args, dyn_kwargs))
        n = len(args)
        statics = tuple((i, args[i]) for i in range(n) if i in self._static_argnums or i - n in self._static_argnums)
        statics += tuple(sorted((k, v) for k, v in kwargs.items() if k in self._static_argnames))
        try:
            hash(statics)
        except TypeError:
            statics = None  # JAX's trace raises its own error for an unhashable static argument
        return (tree, statics, *map(_leaf_signature, leaves)), leaves

    def __call__(self, *args, **kwargs):
        key, leaves = self._key(args, kwargs)
        entry = self._cache.get(key)
        if entry is None:
            entry = self.lower(*args, **kwargs).compile()
            if key[1:2] != (None,) or self._fast:
                self._cache[key] = entry
        return entry._call_flat(leaves)

    def trace(self, *args, **kwargs):
        with _ad.tracing_for_ferry():
            return self._jax.trace(*args, **kwargs)

    def lower(self, *args, **kwargs):
        """Traces the function with JAX on these arguments' types and converts it to ferry IR."""
        traced = self.trace(*args, **kwargs)
        closed = traced.jaxpr
        donated = [bool(i.donated) for i in jax.tree_util.tree_leaves(traced.args_info)]
        name = getattr(self._fun, "__name__", "main")
        name = re.sub(r"[^A-Za-z0-9_]", "_", name) or "main"
        local = _collectives.local_inputs(closed)
        with _ad.tracing_for_ferry():
            lowered, constants, warnings = to_program(closed, closed.in_avals, donated, name=name, local=local)
        constants = [_constant_array(c) for c in constants]
        return Lowered(self, traced, lowered, constants, warnings, donated, local)

    def eval_shape(self, *args, **kwargs):
        return self._jax.eval_shape(*args, **kwargs)

    def clear_cache(self):
        self._cache.clear()

    def _cache_size(self):
        return len(self._cache)


def _constant_array(c):
    aval = core.typeof(c)
    arr = np.ascontiguousarray(np.asarray(jax.random.key_data(c) if is_key(aval) else c))
    if not jdtypes.issubdtype(arr.dtype, np.number) and arr.dtype != np.bool_ and arr.dtype.name != "bfloat16":
        raise invalid_argument(f"a captured constant of dtype {arr.dtype}")
    # The program takes uint32 (and key data, uint32 words) as int32 bits, as it takes arguments.
    return arr.view(np.int32) if arr.dtype == np.uint32 else arr


def jit(fun=None, *, static_argnums=(), static_argnames=(), donate_argnums=(), device_memory_limit=0,
        fit_to_limit=False, backend="cpu", **jax_options):
    """jax.jit for ferry: same calling convention; compiled by ferry with these options.

    device_memory_limit: bytes (0: no limit); a plan that does not fit is ferry.Error
    RESOURCE_EXHAUSTED naming the peak, the limit and the largest live buffers. fit_to_limit: let
    ferry's planner save, recompute or offload any residual to fit the limit. backend: "cpu" or
    "cuda" (where the build has it)."""
    unknown = set(jax_options) - {"keep_unused", "inline", "abstracted_axes", "compiler_options", "device",
                                  "backend_name", "out_shardings", "in_shardings"}
    if unknown:
        raise TypeError(f"ferry.jax.jit got unexpected keyword argument(s) {', '.join(sorted(unknown))}")
    if fun is None:
        return lambda f: jit(f, static_argnums=static_argnums, static_argnames=static_argnames,
                             donate_argnums=donate_argnums, device_memory_limit=device_memory_limit,
                             fit_to_limit=fit_to_limit, backend=backend)
    return Jitted(fun, static_argnums, static_argnames, donate_argnums, device_memory_limit, fit_to_limit, backend)
