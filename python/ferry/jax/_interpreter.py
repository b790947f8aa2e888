"""The jaxpr interpreter that turns a JAX program into a ferry Program.

As JAX's own interpreters do (the "custom interpreters" notebook, jax2tf): one loop reads each
equation's inputs from an environment, calls the converter rule registered for its primitive in
RULES with ferry Tensors, and writes the rule's results back. Higher-order primitives (jit, scan,
cond, while, remat2, custom_jvp_call, ...) recurse into their sub-jaxprs through the same loop
(_control.py). A primitive with no rule is refused by name with the user's source line
(UNIMPLEMENTED), never approximated; every rule's results are checked against the equation's
output types, so a converter mistake is an INTERNAL error instead of a wrong answer.

JAX's types map to ferry's: float32/float64/float16/bfloat16/int32/bool as themselves, uint32 as
i32 bit patterns (the rules that care about signedness read the equation's avals), and a PRNG key
array key<fry>[S] as its key data, i32[S..., 2].
"""
import os

import numpy as np

import jax
from jax import core as _jax_core_public  # noqa: F401  (jax.core is imported for its side effects)
from jax._src import core
from jax._src import dtypes as jdtypes
from jax._src import source_info_util

from ferry import _ferry as F
from ferry._errors import Error, invalid_argument, unimplemented

try:
    import ml_dtypes
    _BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover
    _BF16 = None

# Converter rules: primitive name -> rule(ctx, eqn, *inputs) returning a Tensor, or a list of them
# for primitives with multiple results.
RULES = {}
# Rules that convert higher-order primitives: the JAX policy of an enclosing checkpoint is applied
# inside their bodies, equation by equation, not to the call itself.
HIGHER_ORDER = set()


def rule(*names, higher_order=False):
    def register(fn):
        for n in names:
            RULES[n] = fn
            if higher_order:
                HIGHER_ORDER.add(n)
        return fn
    return register


_FERRY_DTYPES = {
    np.dtype("float32"): "f32", np.dtype("float64"): "f64", np.dtype("float16"): "f16",
    np.dtype("int32"): "i32", np.dtype("uint32"): "i32", np.dtype("bool"): "bool",
}
if _BF16 is not None:
    _FERRY_DTYPES[_BF16] = "bf16"

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_JAX_DIR = os.path.dirname(os.path.abspath(jax.__file__))


def is_key(aval):
    return hasattr(aval, "dtype") and jdtypes.issubdtype(aval.dtype, jdtypes.prng_key)


def key_shape(aval):
    """The trailing dimensions of a key array's data (threefry: (2,))."""
    return tuple(aval.dtype._impl.key_shape)


def physical_shape(aval):
    return tuple(aval.shape) + (key_shape(aval) if is_key(aval) else ())


def is_unsigned(aval):
    return hasattr(aval, "dtype") and not is_key(aval) and np.dtype(aval.dtype) == np.dtype("uint32")


def ferry_dtype(aval, where=None):
    if is_key(aval):
        return "i32"
    dt = np.dtype(aval.dtype)
    name = _FERRY_DTYPES.get(dt)
    if name is None:
        raise unimplemented(f"ferry has no dtype for JAX's {dt}" + (f" ({where})" if where else "")
                            + "; ferry computes in float32, float64, float16, bfloat16, int32, uint32 "
                            "(as int32 bits) and bool")
    return name


def memory_kind(aval):
    space = getattr(aval, "memory_space", None)
    return "pinned_host" if space is not None and "Host" in str(space) else "device"


def spec(aval, where=None):
    return (physical_shape(aval), ferry_dtype(aval, where), memory_kind(aval))


def user_frame(source_info):
    """The innermost frame of the user's code (outside JAX, ferry, flax and optax) that made an
    equation."""
    tb = getattr(source_info, "traceback", None)
    if tb is None:
        return None
    for frame in source_info_util.user_frames(tb):
        f = frame.file_name
        if f.startswith(_PACKAGE_DIR) or f.startswith(_JAX_DIR) or "/flax/" in f or "/optax/" in f:
            continue
        return frame
    return None


# The higher-order equations being converted, innermost last: an equation inside a jitted library
# function (jnp.sort) may carry no frame of the user's, and then the call's line is the user's.
_ENCLOSING = []


def where(eqn):
    frame = user_frame(eqn.source_info) if eqn is not None else None
    for outer in reversed(_ENCLOSING):
        if frame is not None:
            break
        frame = user_frame(outer.source_info)
    return f"{frame.file_name}:{frame.start_line} ({frame.function_name})" if frame else "unknown source line"


def describe(eqn):
    ins = ", ".join(str(v.aval.str_short()) if hasattr(v.aval, "str_short") else str(v.aval) for v in eqn.invars)
    return f"{eqn.primitive.name}({ins}) at {where(eqn)}"


class Context:
    """What one conversion carries: the tensors of the jaxpr's captured constants, the JAX policy
    of the checkpoint being converted (None outside one that ferry differentiates), how deep inside
    ferry's own differentiation the interpreter is, and the warnings for Lowered/Compiled."""

    def __init__(self, constants=None, policy_override=False, override=None):
        self.constants = constants or {}   # id(array) -> Tensor (program inputs)
        self.policy = None                 # the enclosing JAX checkpoint's policy, while converting its body
        self.diff_depth = 0                # > 0 inside ferry.jax.grad / value_and_grad / vjp
        self.warnings = []
        self.policy_override = policy_override  # explain(): every checkpoint under `override`
        self.override = override           # a ferry Policy, or None for "no checkpoints"
        self.mesh_axes = {}                # axis name -> size, inside jax.shard_map bodies (_collectives)
        self.local_vars = []               # top-level inputs the program takes as this process's block
        self._warned = set()

    def warn(self, message):
        if message not in self._warned:
            self._warned.add(message)
            self.warnings.append(message)

    def constant(self, value, eqn=None):
        """The tensor of a captured constant: its program input, or a ferry constant when rank 0."""
        t = self.constants.get(id(value))
        if t is not None:
            return t
        aval = core.typeof(value) if not isinstance(value, np.ndarray) else None
        # A key array has no NumPy form of its own: its key data (uint32 words) is the constant.
        arr = np.asarray(jax.random.key_data(value) if aval is not None and is_key(aval) else value)
        if arr.ndim == 0 or arr.size == 1 and arr.ndim <= 1:
            return scalar(arr.reshape(()).item(), _FERRY_DTYPES.get(arr.dtype) or ferry_dtype(arr), arr.shape)
        if arr.size <= 256:  # a constant made during conversion (random's own): built from scalars
            flat = [scalar(v, ferry_dtype(arr), (1,)) for v in arr.reshape(-1).tolist()]
            return F.reshape(F.concatenate(flat, 0), list(arr.shape))
        raise Error(f"a {arr.dtype}{list(arr.shape)} constant appeared during conversion of "
                    f"{describe(eqn) if eqn else 'a rule'}; ferry takes large constants as program inputs only "
                    "when they are captured by the traced function", "INTERNAL")


def scalar(value, dtype, shape=()):
    """A ferry constant of `value` (a Python or NumPy scalar), uint32 values as their int32 bits."""
    if dtype == "i32":
        v = int(value)
        if v >= 2 ** 31:
            v -= 2 ** 32
        value = v
    elif dtype == "bool":
        value = 1.0 if value else 0.0
    return F.constant(float(value), list(shape), dtype)


def literal(lit):
    aval = lit.aval
    val = lit.val
    if is_key(aval):
        data = np.asarray(jax.random.key_data(val))
        flat = [scalar(v, "i32", (1,)) for v in data.reshape(-1).tolist()]
        return F.reshape(F.concatenate(flat, 0), list(data.shape))
    arr = np.asarray(val)
    if arr.ndim != 0:
        raise Error(f"a non-scalar literal {arr.dtype}{list(arr.shape)}", "INTERNAL")
    return scalar(arr.item(), ferry_dtype(aval), ())


def collect_constants(closed, out):
    """Every array captured anywhere in a closed jaxpr (its consts and those of its sub-jaxprs), by
    id, in a deterministic order: they become the program's trailing inputs."""
    for c in closed.consts:
        if id(c) not in out and np.ndim(c) > 0 and not (np.size(c) == 1 and np.ndim(c) <= 1):
            out[id(c)] = c
    _collect_jaxpr(closed.jaxpr, out)
    return out


def _collect_jaxpr(jaxpr, out):
    for eqn in jaxpr.eqns:
        for v in eqn.params.values():
            _collect_param(v, out)


def _collect_param(v, out):
    if isinstance(v, core.ClosedJaxpr):
        collect_constants(v, out)
    elif isinstance(v, core.Jaxpr):
        _collect_jaxpr(v, out)
    elif isinstance(v, (tuple, list)):
        for x in v:
            _collect_param(x, out)
    elif hasattr(v, "params") and isinstance(getattr(v, "params", None), dict) and type(v).__name__ in (
            "RematTraced", "CheckpointName"):
        for x in v.params.values():
            _collect_param(x, out)


def eval_jaxpr(ctx, jaxpr, consts, args):
    """Interprets `jaxpr` on ferry Tensors: consts for its constvars, args for its invars."""
    env = {}

    def read(v):
        if isinstance(v, core.Literal):
            return literal(v)
        return env[v]

    for v, t in zip(jaxpr.constvars, consts):
        env[v] = t
    if len(args) != len(jaxpr.invars):
        raise Error(f"a jaxpr of {len(jaxpr.invars)} inputs was given {len(args)}", "INTERNAL")
    for v, t in zip(jaxpr.invars, args):
        env[v] = t
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        fn = RULES.get(name)
        if fn is None:
            raise unimplemented(f"ferry cannot convert the JAX primitive '{name}' ({describe(eqn)}); "
                                "ferry.jax.converted_primitives() lists those it converts")
        ins = [read(v) for v in eqn.invars]
        _ENCLOSING.append(eqn)
        try:
            outs = fn(ctx, eqn, *ins)
        except Error as e:
            if " at " in e.message and "while converting" in e.message or e.code == "UNIMPLEMENTED":
                raise
            raise Error(f"{e.message} (while converting {describe(eqn)})", e.code) from None
        finally:
            _ENCLOSING.pop()
        if not eqn.primitive.multiple_results:
            outs = [outs]
        outs = list(outs)
        if len(outs) != len(eqn.outvars):
            raise Error(f"the rule for {name} gave {len(outs)} results for {len(eqn.outvars)}", "INTERNAL")
        if ctx.policy is not None and name not in HIGHER_ORDER:
            from ferry.jax import _policies
            outs = _policies.apply(ctx, eqn, outs)
        for v, t in zip(eqn.outvars, outs):
            check(eqn, v.aval, t)
            if not isinstance(v, core.DropVar):
                env[v] = t
    return [read(v) for v in jaxpr.outvars]


def check(eqn, aval, t):
    """A rule's result must have the equation's type: else ferry would compute something else."""
    if t is None:
        raise Error(f"the rule for {eqn.primitive.name} gave no value ({describe(eqn)})", "INTERNAL")
    want_shape = physical_shape(aval)
    want_dtype = ferry_dtype(aval)
    if tuple(t.shape) != want_shape or t.dtype != want_dtype:
        raise Error(f"converting {describe(eqn)} gave {t.dtype}{list(t.shape)} where JAX has "
                    f"{want_dtype}{list(want_shape)}", "INTERNAL")


def call_closed(ctx, closed, args, eqn=None):
    """Interprets a ClosedJaxpr: its consts are the program inputs registered for them."""
    consts = [ctx.constant(c, eqn) for c in closed.consts]
    return eval_jaxpr(ctx, closed.jaxpr, consts, args)


def to_program(closed, in_avals, donated=(), name="main", policy_override=False, override=None, local=None):
    """Traces the ferry Program of a closed jaxpr. Returns (Lowered, constants, warnings): the
    arrays the program takes after the jaxpr's own inputs (captured constants, counted as arguments
    like any other bytes), and the conversion's warnings. `local`: {input index: (dimension, block
    shape)} of inputs the program takes as this process's block (_collectives.local_inputs)."""
    local = local or {}
    constants = collect_constants(closed, {})
    const_values = list(constants.values())
    specs = [spec(a, "argument") for a in in_avals]
    for i, (_, block) in local.items():
        specs[i] = (tuple(block),) + tuple(specs[i][1:])
    for c in const_values:
        aval = core.typeof(c)
        specs.append(spec(aval, "captured constant"))
    donated = list(donated) + [False] * len(const_values)
    ctx = Context(policy_override=policy_override, override=override)
    ctx.local_vars = [closed.jaxpr.invars[i] for i in local]

    def fn(inputs):
        n = len(in_avals)
        for c, t in zip(const_values, inputs[n:]):
            ctx.constants[id(c)] = t
        return call_closed(ctx, closed, inputs[:n])

    lowered = F.trace(fn, specs, donated, name)
    return lowered, const_values, ctx.warnings


def invalid(message):
    return invalid_argument(message)
