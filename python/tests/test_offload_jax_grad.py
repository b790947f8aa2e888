"""Per-step offload inside a differentiated scan, as the second report's user writes it: JAX
differentiates (jax.grad: JAX's partial evaluation places each residual, its offloaded ones in host
memory inside the forward scan) and ferry.jax.jit runs those decisions; and the same programs under
ferry.jax.grad. Any scan length and carry size, several offloaded names of different shapes, reverse
and nested scans, save_and_offload_only_these_names and offload_dot_with_no_batch_dims.

What ferry holds is read off JAX's own program (jax.make_jaxpr of the gradient): the host holds
exactly the stacks JAX puts in host memory, and the device holds nothing that grows with the scan
length beyond the stacks JAX keeps on the device (a residual the policy does not offload, such as
the carry the second report's checkpoint saves at every step). Where every per-step residual is
offloaded, the device is flat in the scan length.
"""
import jax
import jax.ad_checkpoint
import jax.numpy as jnp
import numpy as np
import pytest
from jax.ad_checkpoint import checkpoint_name

import ferry.jax
from conftest import assert_trees_close, check_invariants

LENGTHS = (8, 16, 64)
CARRIES = (256, 4096)  # floats in the carry


def offloading(*names):
    return jax.checkpoint_policies.save_and_offload_only_these_names(
        names_which_can_be_saved=(), names_which_can_be_offloaded=names,
        offload_src="device", offload_dst="pinned_host")


def saving(*names):
    return jax.checkpoint_policies.save_and_offload_only_these_names(
        names_which_can_be_saved=names, names_which_can_be_offloaded=(),
        offload_src="device", offload_dst="pinned_host")


def vectors(n, c):
    p = jnp.linspace(0.1, 1.0, c, dtype=jnp.float32)
    xs = jnp.linspace(0.2, 0.9, n * c, dtype=jnp.float32).reshape(n, c)
    return p, xs


# Each program: (its loss under an offloading or a saving policy, its arguments for n steps and a
# carry of c floats). Gradients are taken with respect to the first argument.

def second_report(policy):
    """The report's step unchanged: its carry (the checkpoint's input) is saved, on the device."""
    def loss(p, xs):
        def step(y, _):
            y = jnp.sin(y)
            y = checkpoint_name(y, "save_remat")
            return jnp.sin(y), ()
        step = jax.remat(step, policy=policy("save_remat"))
        return jax.lax.scan(step, p, xs)[0].sum()
    return loss, vectors


def second_report_carry_offloaded(policy):
    """The report's step with its carry named and offloaded too: nothing per step on the device."""
    def loss(p, xs):
        def step(y, _):
            y = checkpoint_name(y, "carry")
            y = checkpoint_name(jnp.sin(y), "save_remat")
            return jnp.sin(y), ()
        step = jax.remat(step, policy=policy("carry", "save_remat"))
        return jax.lax.scan(step, p, xs)[0].sum()
    return loss, vectors


def several_shapes(policy):
    """Three offloaded names: the carry, a [16, 8] outer product and a carry-sized product."""
    def loss(p, xs):
        def step(y, x):
            y = checkpoint_name(y, "carry")
            a = checkpoint_name(jnp.outer(jnp.sin(y[:16]), x[:8]), "a")
            b = checkpoint_name(jnp.cos(y) * x, "b")
            return jnp.tanh(b) + 1e-3 * a.sum(), ()
        step = jax.remat(step, policy=policy("carry", "a", "b"))
        return jax.lax.scan(step, p, xs)[0].sum()
    return loss, vectors


def reverse_with_ys(policy):
    """A reverse scan whose per-step output (16 floats, on the device as JAX keeps it) is used."""
    def loss(p, xs):
        def step(y, x):
            y = checkpoint_name(y, "carry")
            h = checkpoint_name(jnp.sin(y) * x, "h")
            return jnp.sin(h), h[:16] * h[-16:]
        step = jax.remat(step, policy=policy("carry", "h"))
        c, ys = jax.lax.scan(step, p, xs, reverse=True)
        return c.sum() + ys.sum()
    return loss, vectors


def nested(policy):
    """A scan in the checkpointed step, whose own step offloads its carry and a product."""
    def loss(p, xs):
        def inner(a, row):
            a = checkpoint_name(a, "carry")
            return jnp.sin(checkpoint_name(jnp.cos(row) * a, "r")), ()
        inner = jax.remat(inner, policy=policy("carry", "r"))

        def outer(y, x):
            y = checkpoint_name(y, "carry")
            return jax.lax.scan(inner, y, jnp.stack([x, 2.0 * x, 0.5 * x]))[0], ()
        outer = jax.remat(outer, policy=policy("carry", "r"))
        return jax.lax.scan(outer, p, xs)[0].sum()
    return loss, vectors


def scanned_dots(policy):
    """Layers x -> tanh(x @ w_i) over per-step weights; the dot outputs are offloaded."""
    def loss(p, ws):
        def step(y, w):
            h = y.reshape(-1, w.shape[0]) @ w
            return jnp.tanh(h).reshape(-1), ()
        step = jax.remat(step, policy=policy)
        return jax.lax.scan(step, p, ws)[0].sum()

    def args(n, c):
        k = 16
        p = jnp.linspace(0.1, 1.0, c, dtype=jnp.float32)
        ws = 0.25 * jnp.cos(jnp.arange(n * k * k, dtype=jnp.float32)).reshape(n, k, k)
        return p, ws
    return loss, args


def dots_offloading():
    return jax.checkpoint_policies.offload_dot_with_no_batch_dims("device", "pinned_host")


def dots_saving():
    return jax.checkpoint_policies.dots_with_no_batch_dims_saveable


PROGRAMS = {
    "second_report": lambda kind: second_report(offloading if kind == "offload" else saving),
    "second_report_carry_offloaded": lambda kind: second_report_carry_offloaded(
        offloading if kind == "offload" else saving),
    "several_shapes": lambda kind: several_shapes(offloading if kind == "offload" else saving),
    "reverse_with_ys": lambda kind: reverse_with_ys(offloading if kind == "offload" else saving),
    "nested": lambda kind: nested(offloading if kind == "offload" else saving),
    "scanned_dots": lambda kind: scanned_dots(dots_offloading() if kind == "offload" else dots_saving()),
}
# Programs whose every per-step residual is offloaded (JAX's program keeps no stack on the device).
ALL_OFFLOADED = ("second_report_carry_offloaded", "several_shapes", "nested", "scanned_dots")


def stacked_bytes(loss, args):
    """Bytes of the stacks (scan results along the scan) JAX's gradient program keeps, by memory
    space: {"host": ..., "device": ...}, read off jax.make_jaxpr(jax.grad(loss))."""
    jaxpr = jax.make_jaxpr(jax.grad(loss))(*args).jaxpr
    out = {"host": 0, "device": 0}
    for eqn in jaxpr.eqns:
        if eqn.primitive.name != "scan":
            continue
        for v in eqn.outvars[eqn.params["num_carry"]:]:
            aval = v.aval
            space = "host" if aval.memory_space == jax.memory.Space.Host else "device"
            out[space] += aval.size * aval.dtype.itemsize
    return out


def compiled_for(grad, loss, args):
    return ferry.jax.jit(grad(loss)).lower(*args).compile()


@pytest.mark.parametrize("c", CARRIES)
@pytest.mark.parametrize("program", list(PROGRAMS))
def test_offloaded_stacks_are_held_on_the_host_alone(program, c):
    loss, make_args = PROGRAMS[program]("offload")
    rest = {jax.grad: set(), ferry.jax.grad: set()}
    hosts = []
    for n in LENGTHS:
        args = make_args(n, c)
        stacks = stacked_bytes(loss, args)
        assert stacks["host"] > 0
        if program in ALL_OFFLOADED:
            assert stacks["device"] == 0
        got = {}
        for grad in (jax.grad, ferry.jax.grad):
            compiled = compiled_for(grad, loss, args)
            got[grad] = compiled(*args)
            m = check_invariants(compiled)  # measured device high-water == peak_memory_in_bytes
            assert compiled.execution_stats().host_high_water_bytes == m.host_peak_memory_in_bytes
            # The device holds the stacks JAX's program keeps there and a remainder that does not
            # depend on the length: no device copy of an offloaded stack, nothing else stacked.
            rest[grad].add(m.temp_size_in_bytes - stacks["device"])
            if grad is jax.grad:
                # The host holds exactly the stacks JAX placed there, one slice per step.
                assert m.host_temp_size_in_bytes == stacks["host"], (n, m, stacks)
            else:
                hosts.append(m.host_temp_size_in_bytes)
        assert_trees_close(got[ferry.jax.grad], got[jax.grad], rtol=1e-5, atol=1e-5)
        if n == LENGTHS[0] and c == CARRIES[0]:  # XLA's compile is the slow part of this test
            assert_trees_close(got[jax.grad], jax.jit(jax.grad(loss))(*args), rtol=1e-5, atol=1e-5)
    for grad, r in rest.items():
        assert len(r) == 1, f"{grad.__module__}: device temporaries beyond JAX's device stacks vary with the length: {r}"
    # ferry.jax.grad (its own partitioning) offloads per step too: host linear in the length.
    (n0, n1, n2), (h0, h1, h2) = LENGTHS, hosts
    assert h2 > h1 > h0 and (h2 - h0) * (n1 - n0) == (h1 - h0) * (n2 - n0), hosts


def test_second_report_device_grows_by_its_saved_carries_alone():
    """The report's program under jax.grad: the device grows by the carry stack JAX's checkpoint
    saves (the step's input, on the device in JAX's program too), not by the offloaded stack."""
    loss, make_args = second_report(offloading)
    c = 4096
    temps = []
    for n in (8, 64):
        args = make_args(n, c)
        compiled = compiled_for(jax.grad, loss, args)
        compiled(*args)
        temps.append(check_invariants(compiled).temp_size_in_bytes)
    m8, m64 = temps
    carry_bytes = c * 4
    assert m64 - m8 == (64 - 8) * carry_bytes


@pytest.mark.parametrize("program", list(PROGRAMS))
@pytest.mark.parametrize("grad", [jax.grad, ferry.jax.grad], ids=["jax.grad", "ferry.jax.grad"])
def test_offloading_never_raises_the_device_peak(program, grad):
    """Invariant 3: offloading a residual never raises the device peak compared with saving it, and
    lowers it whenever the residual was live at the peak (here every offloaded stack is live
    through the backward scan, where the saving plan peaks; it is at least 8 slices long)."""
    c, n = 1024, 16
    off_loss, make_args = PROGRAMS[program]("offload")
    save_loss, _ = PROGRAMS[program]("save")
    args = make_args(n, c)
    off, saved = compiled_for(grad, off_loss, args), compiled_for(grad, save_loss, args)
    assert_trees_close(off(*args), saved(*args), rtol=1e-5, atol=1e-5)
    m_off, m_saved = check_invariants(off), check_invariants(saved)
    assert m_saved.host_temp_size_in_bytes == 0 < m_off.host_temp_size_in_bytes
    assert m_off.peak_memory_in_bytes < m_saved.peak_memory_in_bytes, (m_off, m_saved)
