"""jax.shard_map in one process: a mesh of one device runs its body with every collective over a
size-1 axis (no exchange), equal to jax.jit; a mesh axis that needs more processes than this launch
has, and joining without a launcher, are refused with what to do. (More than one process:
python/tests/distributed, under mpirun.)"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AbstractMesh, Mesh, PartitionSpec as P

import ferry
import ferry.distributed
import ferry.jax
from conftest import assert_trees_close


def one_device_mesh(*names):
    return Mesh(np.array(jax.devices()[:1]).reshape((1,) * len(names)), names)


def test_every_collective_over_a_mesh_of_one_device_is_jaxs():
    def f(x):
        return (jax.lax.psum(x, "data"), jax.lax.pmean(x, "data"), jax.lax.all_gather(x, "data"),
                jax.lax.all_gather(x, "data", axis=1, tiled=True),
                jax.lax.psum_scatter(x, "data", scatter_dimension=1, tiled=True),
                jax.lax.psum_scatter(x[:1], "data"), jax.lax.axis_index("data")[None])
    sm = jax.shard_map(f, mesh=one_device_mesh("data"), in_specs=P("data"), out_specs=P("data"))
    x = jnp.arange(12.0).reshape(4, 3)
    assert_trees_close(ferry.jax.jit(sm)(x), jax.jit(sm)(x))


def test_ferry_differentiates_a_shard_map_of_two_axes():
    mesh = one_device_mesh("data", "model")
    sm = jax.shard_map(lambda w, x: jax.lax.pmean(jnp.sum(jnp.tanh(x @ w)), ("data", "model")), mesh=mesh,
                       in_specs=(P(None, "model"), P("data")), out_specs=P())
    w, x = jnp.ones((3, 2)) * 0.3, jnp.arange(12.0).reshape(4, 3) / 10
    assert_trees_close(ferry.jax.jit(ferry.jax.grad(sm, argnums=(0, 1)))(w, x),
                       jax.jit(jax.grad(sm, argnums=(0, 1)))(w, x))


def test_a_mesh_axis_larger_than_the_launch_says_how_to_launch():
    sm = jax.shard_map(lambda x: jax.lax.psum(x, "data"), mesh=AbstractMesh((2,), ("data",)),
                       in_specs=P("data"), out_specs=P())
    with pytest.raises(ferry.Error) as e:
        ferry.jax.jit(sm)(jnp.ones((4, 3)))
    assert e.value.code == "INVALID_ARGUMENT"
    assert "size 2" in e.value.message and "mpirun -np N" in e.value.message and "initialize()" in e.value.message


def test_two_mesh_axes_over_processes_are_unimplemented():
    sm = jax.shard_map(lambda x: x * 2, mesh=AbstractMesh((2, 2), ("a", "b")), in_specs=P("a", "b"),
                       out_specs=P("a", "b"))
    with pytest.raises(ferry.Error) as e:
        ferry.jax.jit(sm)(jnp.ones((4, 4)))
    assert e.value.code == "UNIMPLEMENTED" and "'a'" in e.value.message and "'b'" in e.value.message


def test_initialize_without_a_launcher_says_how_to_launch():
    with pytest.raises(ferry.Error) as e:
        ferry.distributed.initialize()
    assert e.value.code == "INVALID_ARGUMENT" and "mpirun -np 2" in e.value.message
    assert not ferry.distributed.is_initialized()
    assert (ferry.distributed.process_index(), ferry.distributed.process_count()) == (0, 1)


@pytest.mark.parametrize("bad", [dict(axis_name=""), dict(axis_name=3), dict(timeout="soon")])
def test_initialize_refuses_bad_arguments(bad):
    with pytest.raises(ferry.Error) as e:
        ferry.distributed.initialize(**bad)
    assert e.value.code == "INVALID_ARGUMENT"
