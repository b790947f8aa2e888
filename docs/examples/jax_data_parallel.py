"""The JAX guide's data-parallel program (More than one process), whole: the guide quotes it from
`import jax` to the step, and docs.snippets checks that it still does. A test under
`mpirun -np 2` (docs.jax_data_parallel_np2, where the build has the Python package and MPI): it fails
unless every process's losses equal jax.jit's on the whole batch in one process and fall.
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, PartitionSpec as P
import ferry.jax

ferry.jax.distributed.initialize()                 # the processes mpirun started (and a JAX device each)
n = ferry.jax.process_count()
mesh = Mesh(np.array(jax.devices()[:n]), ("data",))  # one mesh position per process

def loss_fn(w, x, y):
  return jnp.mean((jnp.tanh(x @ w) - y) ** 2)

def mean_loss(w, x, y):                            # each process: its rows of the batch
  return jax.lax.pmean(loss_fn(w, x, y), "data")    # the mean of the processes' losses

@ferry.jax.jit
def step(w, x, y):
  loss, g = jax.shard_map(jax.value_and_grad(mean_loss), mesh=mesh,
                          in_specs=(P(), P("data"), P("data")), out_specs=P())(w, x, y)
  return w - 0.5 * g, loss

rng = np.random.RandomState(0)
w, x, y = jnp.zeros((8, 2)), jnp.asarray(rng.randn(16 * n, 8), jnp.float32), jnp.asarray(rng.randn(16 * n, 2), jnp.float32)
losses = []
for i in range(5):
  w, loss = step(w, x, y)
  losses.append(float(loss))
if ferry.jax.process_index() == 0:
  print("losses", np.round(losses, 4))

reference = jax.jit(lambda w: (w - 0.5 * jax.grad(loss_fn)(w, x, y), loss_fn(w, x, y)))
w_one, want = jnp.zeros((8, 2)), []
for i in range(5):
  w_one, loss = reference(w_one)
  want.append(float(loss))
np.testing.assert_allclose(losses, want, rtol=1e-5)
np.testing.assert_allclose(np.asarray(w), np.asarray(w_one), rtol=1e-5, atol=1e-6)
assert losses[-1] < losses[0], losses
