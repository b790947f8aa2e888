"""JAX checkpoint policies on ferry's checkpoints.

JAX calls a policy once per equation of a checkpointed function, as policy(prim, *in_avals,
**params) with its own primitive objects, and saves, offloads or recomputes the equation's outputs
by the answer. The converter does the same while it converts a checkpoint's body (any depth:
inside jit, scan and cond bodies too) and records the answer on the converted equation: outputs
the policy saves or offloads are wrapped in a checkpoint_name whose name carries the decision
("<name>@jax:save", "<name>@jax:offload:device:pinned_host"), and the ferry checkpoint's policy
(ferry._ferry.jax_policy) reads it back; everything else is recomputed, as in JAX. So custom
policies (the first report's) work unchanged, and no Python runs while ferry partitions.

`ferry.jax.automatic` as a policy hands every decision to ferry's planner (policies::automatic).
"""
from jax._src.interpreters import partial_eval as pe

from ferry import _ferry as F
from ferry._errors import invalid_argument

_FERRY = {}


def automatic(prim, *avals, **params):
    """A jax.checkpoint policy that lets ferry decide (save, recompute or offload each value for
    the compile's device_memory_limit at the lowest estimated step time). Under jax.jit it saves
    everything, which is what ferry's planner does without a limit."""
    return pe.Saveable


def _named(name):
    if name not in _FERRY:
        _FERRY[name] = F.policy(name) if name != "jax" else F.jax_policy("jax")
    return _FERRY[name]


def ferry_policy(policy):
    """(the ferry Policy of a JAX checkpoint, the JAX policy to call per equation or None)."""
    import jax
    if policy is automatic:
        return _named("automatic"), None
    if policy is None or policy is jax.checkpoint_policies.nothing_saveable:
        return _named("nothing_saveable"), None
    if policy is jax.checkpoint_policies.everything_saveable:
        return _named("everything_saveable"), None
    return _named("jax"), policy


_SRC = {"device": "device", "tpu_hbm": "device", "hbm": "device"}
_DST = {"pinned_host": "pinned_host", "unpinned_host": "unpinned_host", "device": "device",
        "tpu_hbm": "device"}


def decide(ctx, eqn):
    """The policy's answer for one equation, as 'save', ('offload', dst) or None (recompute)."""
    case = ctx.policy(eqn.primitive, *[v.aval for v in eqn.invars], **eqn.params)
    try:
        case = pe.ensure_enum(case)
    except TypeError as e:
        raise invalid_argument(f"checkpoint policy {getattr(ctx.policy, '__name__', ctx.policy)!r}: {e}") from None
    if isinstance(case, pe.Offloadable):
        src, dst = str(case.src), str(case.dst)
        if src not in _SRC or dst not in _DST:
            raise invalid_argument(f"checkpoint policy offloads from {src!r} to {dst!r}; ferry's memory kinds are "
                                   "'device' (also 'tpu_hbm'), 'pinned_host' and 'unpinned_host'")
        return "save" if _DST[dst] == "device" else ("offload", _DST[dst])
    return "save" if case is pe.Saveable else None


def encode(base, decision, x):
    if decision == "save":
        return f"{base}@jax:save"
    if x.memory_kind == decision[1]:
        return f"{base}@jax:save"
    return f"{base}@jax:offload:{x.memory_kind}:{decision[1]}"


def apply(ctx, eqn, outs):
    """The equation's outputs, each wrapped in the checkpoint_name that carries the policy's decision
    (unchanged where the policy recomputes)."""
    if eqn.primitive.name == "name":
        return outs
    decision = decide(ctx, eqn)
    if decision is None:
        return outs
    from ferry.jax._interpreter import is_key
    return [t if is_key(v.aval) else F.checkpoint_name(t, encode(eqn.primitive.name, decision, t))
            for t, v in zip(outs, eqn.outvars)]


def name(ctx, eqn, x, user_name, prim=None, params=None):
    """checkpoint_name(x, name), with the enclosing policy's decision for it in the name."""
    if ctx.policy is None:
        return F.checkpoint_name(x, user_name)
    if eqn.primitive.name == "name":
        decision = decide(ctx, eqn)
    else:  # remat3's CheckpointName: asked as JAX asks for name_p
        from jax._src.ad_checkpoint import name_p
        case = pe.ensure_enum(ctx.policy(name_p, eqn.invars[0].aval, name=user_name))
        decision = None if case is pe.Recompute else (
            "save" if case is pe.Saveable else ("offload", _DST.get(str(case.dst), "pinned_host")))
    return F.checkpoint_name(x, user_name if decision is None else encode(user_name, decision, x))
