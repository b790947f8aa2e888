"""What a user inspects before running: the residuals ferry's backward pass keeps, and the
per-policy explain table (each policy's device peak, host bytes, FLOPs and estimated step time)."""
import jax

from ferry import _ferry as F
from ferry.jax import _ad
from ferry.jax._interpreter import Context, call_closed, collect_constants, spec, to_program


def _closed(fun, args, kwargs):
    with _ad.tracing_for_ferry():
        return jax.make_jaxpr(lambda *a: fun(*a, **kwargs))(*args)


def saved_residuals(fun, *args, **kwargs):
    """What ferry's backward pass of fun keeps (differentiated with respect to every argument), as
    (type, decision, source) tuples: "f32[2,3]{pinned_host}", "offloaded", "named 'x', ..."."""
    closed = _closed(fun, args, kwargs)
    if collect_constants(closed, {}):
        closed = jax.make_jaxpr(lambda *a: fun(*a, **kwargs))(*args)
    ctx = Context()
    ctx.diff_depth = 1
    specs = [spec(a) for a in closed.in_avals]
    rows = F.saved_residuals(lambda ins: call_closed(ctx, closed, list(ins)), specs)
    from ferry.jax._jit import _NAME_CODE
    return [(t, d, _NAME_CODE.sub("", s)) for t, d, s in rows]


def print_saved_residuals(fun, *args, **kwargs):
    for t, d, s in saved_residuals(fun, *args, **kwargs):
        print(f"{t:<28} {d:<10} {s}")


def explain(fun, *args, device_memory_limit=0, fit_to_limit=False, **kwargs):
    """One row per checkpoint policy (no checkpoint, ferry's built-in policies, automatic) for the
    step fun(*args): every jax.checkpoint in it is converted under that policy. Returns (rows,
    text): rows are dicts (policy, fits, device_peak, host_peak, flops, recompute_flops,
    bytes_copied, estimated_seconds); text is ferry's table."""
    closed = _closed(fun, args, kwargs)
    consts = list(collect_constants(closed, {}).values())
    if consts:
        raise ValueError("explain: the step captures array constants; pass them as arguments")

    def lower(policy):
        lowered, _, _ = to_program(closed, closed.in_avals, policy_override=True, override=policy)
        return lowered

    return F.explain(lower, int(device_memory_limit), bool(fit_to_limit))


def _page_plans(plans):
    items = plans.items() if isinstance(plans, dict) else plans
    out = []
    for title, compiled in items:
        out.append((str(title), getattr(compiled, "_compiled", compiled)))
    return out


def memory_html(plans, device_memory_limit=0, title="ferry memory plans"):
    """Several compiled programs on one page, as small multiples on one scale: plans is a dict (or a
    list of pairs) from a title (e.g. the policy's name) to a compiled program (ferry.jax.jit's
    .lower(...).compile()). The limit, when given, is drawn across the device charts."""
    return F.memory_html(_page_plans(plans), int(device_memory_limit), str(title))


def save_memory_html(plans, path, device_memory_limit=0, title="ferry memory plans"):
    """memory_html() written to path."""
    F.save_memory_html(_page_plans(plans), str(path), int(device_memory_limit), str(title))
