"""jax.shard_map over a mesh of the processes under ferry.jax.jit: each process runs its shard, the
collectives exchange between the processes, and every result (values, ferry's own gradients, a
data-parallel training run) equals jax.jit's on a mesh of as many CPU devices in one process."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.sharding import Mesh, PartitionSpec as P

import ferry
import ferry.distributed
import ferry.jax
from conftest import assert_trees_close, check_invariants  # python/tests/conftest.py

N = ferry.distributed.process_count()


@pytest.fixture(scope="module")
def mesh():
    assert N > 1, "run under mpirun -np 2 (or more)"
    assert len(jax.devices()) >= N, f"JAX needs {N} CPU devices: XLA_FLAGS=--xla_force_host_platform_device_count={N}"
    return Mesh(np.array(jax.devices()[:N]), ("data",))


def rand(*shape, seed=0):
    return jnp.asarray(np.random.RandomState(seed).randn(*shape).astype(np.float32))


def test_processes_are_distinct():
    got = ferry.distributed.process_index()
    everyone = jax.jit(lambda x: x)(np.arange(N))  # the reference side needs no exchange
    assert 0 <= got < N and len(everyone) == N


def test_every_collective_equals_jax(mesh):
    def f(x, w):
        y = jnp.tanh(x @ w)
        return (jax.lax.psum(y.sum(), "data"), jax.lax.pmean(y, "data"),
                jax.lax.all_gather(y, "data"), jax.lax.all_gather(y, "data", axis=1, tiled=True),
                jax.lax.psum_scatter(x, "data", scatter_dimension=1, tiled=True),
                jax.lax.psum_scatter(jnp.ones((N, 3)) * x[0, 0], "data"),
                jax.lax.axis_index("data")[None], jax.lax.psum(jnp.int32(3), "data"))
    sm = jax.shard_map(f, mesh=mesh, in_specs=(P("data"), P()),
                       out_specs=(P(), P(), P("data"), P("data"), P("data"), P("data"), P("data"), P()))
    x, w = rand(4 * N, 2 * N, seed=1), rand(2 * N, 5, seed=2)
    assert_trees_close(ferry.jax.jit(sm)(x, w), jax.jit(sm)(x, w))


def test_a_sharded_dimension_other_than_the_first(mesh):
    sm = jax.shard_map(lambda x: jnp.sin(x) * (1 + jax.lax.axis_index("data")), mesh=mesh,
                       in_specs=P(None, "data"), out_specs=P(None, "data"))
    x = rand(3, 2 * N, 4, seed=3)
    assert_trees_close(ferry.jax.jit(sm)(x), jax.jit(sm)(x))


def loss_fn(params, batch):
    x, y = batch
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return jnp.mean((h @ params["w2"] - y) ** 2)


def params_and_batch(batch=8):
    params = {"w1": rand(6, 16, seed=4) * 0.3, "b1": jnp.zeros(16), "w2": rand(16, 2, seed=5) * 0.3}
    return params, (rand(batch * N, 6, seed=6), rand(batch * N, 2, seed=7))


@pytest.mark.parametrize("inside", [True, False], ids=["jax_grad_inside", "ferry_grad_outside"])
def test_gradients_of_the_shards_are_jaxs(mesh, inside):
    params, batch = params_and_batch()
    if inside:  # JAX differentiates inside the shard; ferry runs the exchanges
        def f(p, b):
            loss, g = jax.value_and_grad(loss_fn)(p, b)
            return jax.lax.pmean(loss, "data"), jax.lax.pmean(g, "data")
        sm = jax.shard_map(f, mesh=mesh, in_specs=(P(), P("data")), out_specs=P())
        got, want = ferry.jax.jit(sm)(params, batch), jax.jit(sm)(params, batch)
    else:  # ferry differentiates the shard_map: its collectives' VJPs are JAX's
        sm = jax.shard_map(lambda p, b: jax.lax.pmean(loss_fn(p, b), "data"), mesh=mesh,
                           in_specs=(P(), P("data")), out_specs=P())
        got = ferry.jax.jit(ferry.jax.value_and_grad(sm, argnums=(0, 1)))(params, batch)
        want = jax.jit(jax.value_and_grad(sm, argnums=(0, 1)))(params, batch)
    assert_trees_close(got, want, rtol=1e-5, atol=1e-6)


def test_ferry_differentiates_through_gathered_results(mesh):
    sm = jax.shard_map(lambda x, w: jnp.tanh(x @ w), mesh=mesh, in_specs=(P("data"), P()), out_specs=P("data"))
    x, w = rand(2 * N, 3, seed=8), rand(3, 4, seed=9)
    f = lambda x, w: jnp.sum(sm(x, w) ** 2)
    assert_trees_close(ferry.jax.jit(ferry.jax.grad(f, argnums=(0, 1)))(x, w),
                       jax.jit(jax.grad(f, argnums=(0, 1)))(x, w), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("opt", [optax.adamw(1e-2), optax.sgd(0.3)], ids=["adamw", "sgd"])
def test_data_parallel_training_equals_one_process_on_the_whole_batch(mesh, opt):
    """Ten steps, data-parallel (each process's rows of the batch), against the same steps in one
    process on the whole batch with jax.jit (SGD as well as AdamW: AdamW's update does not see a
    gradient's scale)."""

    # The gradient of the processes' mean loss with respect to replicated parameters is the mean
    # of their gradients (JAX sums a replicated input's cotangents over the mesh, check_vma).
    mean_loss = lambda p, b: jax.lax.pmean(loss_fn(p, b), "data")
    sharded_grads = jax.shard_map(jax.value_and_grad(mean_loss), mesh=mesh, in_specs=(P(), P("data")), out_specs=P())

    def step_dp(p, s, b):
        loss, g = sharded_grads(p, b)
        u, s = opt.update(g, s, p)
        return optax.apply_updates(p, u), s, loss

    def step_one(p, s, b):
        loss, g = jax.value_and_grad(loss_fn)(p, b)
        u, s = opt.update(g, s, p)
        return optax.apply_updates(p, u), s, loss

    params, batch = params_and_batch()
    f_step, j_step = ferry.jax.jit(step_dp), jax.jit(step_one)
    fp, fs, jp, js = params, opt.init(params), params, opt.init(params)
    f_losses, j_losses = [], []
    for _ in range(10):
        fp, fs, fl = f_step(fp, fs, batch)
        jp, js, jl = j_step(jp, js, batch)
        f_losses.append(float(fl))
        j_losses.append(float(jl))
    np.testing.assert_allclose(f_losses, j_losses, rtol=2e-5)
    assert f_losses[-1] < f_losses[0]
    assert_trees_close(fp, jp, rtol=1e-4, atol=1e-5)
    compiled = f_step.lower(fp, fs, batch).compile()
    compiled(fp, fs, batch)
    check_invariants(compiled)


def test_every_process_measures_what_it_planned(mesh):
    sm = jax.shard_map(lambda x: jax.lax.psum(jnp.exp(x), "data"), mesh=mesh, in_specs=P("data"), out_specs=P())
    x = rand(4 * N, 64, seed=10)
    compiled = ferry.jax.jit(sm).lower(x).compile()
    compiled(x)
    m = check_invariants(compiled)
    assert m.peak_memory_in_bytes > 0
    # The bytes sent, counted by the run as each exchange started, are the plan's: a ring's
    # all-reduce of this process's f32[4, 64] block.
    assert compiled.execution_stats().bytes_exchanged == compiled.cost_analysis().bytes_exchanged
    assert compiled.cost_analysis().bytes_exchanged == 2 * (N - 1) * 4 * 64 * 4 // N


def test_a_collective_inside_a_scan(mesh):
    def body(c, x):
        return c + jax.lax.psum(jnp.sum(x), "data"), jax.lax.pmean(x, "data")
    sm = jax.shard_map(lambda xs: jax.lax.scan(body, 0.0, xs), mesh=mesh, in_specs=P(None, "data"),
                       out_specs=(P(), P()))
    xs = rand(5, 2 * N, 3, seed=11)
    assert_trees_close(ferry.jax.jit(sm)(xs), jax.jit(sm)(xs), rtol=1e-5, atol=1e-6)


def test_the_jax_names_are_ferrys_and_joining_twice_is_refused():
    assert ferry.jax.process_index() == ferry.distributed.process_index()
    assert ferry.jax.process_count() == N and ferry.jax.distributed is ferry.distributed
    with pytest.raises(ferry.Error) as e:
        ferry.jax.distributed.initialize()
    assert e.value.code == "INVALID_ARGUMENT"


def test_an_abstract_mesh_of_the_processes_needs_no_devices(mesh):
    from jax.sharding import AbstractMesh
    f = lambda x: jax.lax.psum(jnp.cos(x), "data") * (1 + jax.lax.axis_index("data"))
    on = lambda m: jax.shard_map(f, mesh=m, in_specs=P("data"), out_specs=P("data"))
    x = rand(2 * N, 3, seed=12)
    assert_trees_close(ferry.jax.jit(on(AbstractMesh((N,), ("data",))))(x), jax.jit(on(mesh))(x))


@pytest.mark.parametrize("tiled", [True, False])
def test_all_gather_invariant_and_its_gradient(mesh, tiled):
    from jax._src.lax.parallel import all_gather_invariant  # what all_gather is where the result is replicated
    f = lambda x: jnp.sum(jnp.sin(all_gather_invariant(x * x, "data", axis=0, tiled=tiled)) ** 2)
    sm = jax.shard_map(f, mesh=mesh, in_specs=P("data"), out_specs=P())
    x = rand(2 * N, 3, seed=13)
    assert_trees_close(ferry.jax.jit(sm)(x), jax.jit(sm)(x))
    assert_trees_close(ferry.jax.jit(ferry.jax.grad(sm))(x), jax.jit(jax.grad(sm))(x), rtol=1e-5, atol=1e-6)


def test_an_argument_used_only_as_a_sharded_operand_is_held_as_this_processs_block(mesh):
    """The batch of a data-parallel step: each process's plan holds its rows, not the whole batch
    (the call takes the whole argument, as jax.jit's does, and passes on this process's block)."""
    params, batch = params_and_batch(batch=16)
    mean_loss = lambda p, b: jax.lax.pmean(loss_fn(p, b), "data")
    sm = jax.shard_map(jax.value_and_grad(mean_loss), mesh=mesh, in_specs=(P(), P("data")), out_specs=P())
    step = ferry.jax.jit(sm)
    compiled = step.lower(params, batch).compile()
    param_bytes = sum(np.asarray(a).nbytes for a in jax.tree.leaves(params))
    batch_bytes = sum(np.asarray(a).nbytes for a in jax.tree.leaves(batch))
    assert compiled.memory_analysis().argument_size_in_bytes == param_bytes + batch_bytes // N
    assert "f32[16,6]" in step.lower(params, batch).as_text()  # the block, not f32[32,6]
    assert_trees_close(step(params, batch), jax.jit(sm)(params, batch), rtol=1e-5, atol=1e-6)
    compiled(params, batch)
    check_invariants(compiled)
