"""The first report (seeds/000) on ferry: its own policy, Offloadable(src="tpu_hbm",
dst="unpinned_host") for dots without batch dimensions, unchanged. Under ferry.jax.grad the dots
really go to host memory: the step that does not fit the device limit with
dot_with_no_batch_dims_saveable compiles within it with the offload policy, and
memory_analysis() shows the host bytes. Under jax.grad (JAX differentiated it) the same policy
becomes a device-to-device copy, which ferry runs as JAX decided and reports in warnings().
"""
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax._src.lax import lax as lax_internal
from jax.ad_checkpoint import Offloadable, Recompute, Saveable

import ferry
import ferry.jax


def dot_with_no_batch_dims_saveable(prim, *_, **params):
  # This is a useful heuristic for transformers.
  if prim is lax_internal.dot_general_p:
    (_, _), (lhs_b, rhs_b) = params['dimension_numbers']
    if not lhs_b and not rhs_b:
      return Saveable
  return Recompute


def dot_with_no_batch_dims_offload(prim, *_, **params):
  # This is a useful heuristic for transformers.
  if prim is lax_internal.dot_general_p:
    (_, _), (lhs_b, rhs_b) = params['dimension_numbers']
    if not lhs_b and not rhs_b:
      return Offloadable(src="tpu_hbm", dst="unpinned_host")
  return Recompute


def model(params, x, train=True):
  for w in params:
    x = jnp.sin(jnp.tanh(x @ w))
  return jnp.sum(x * x)


def make_step(policy, grad=ferry.jax.grad):
  def step(params, x):
    remat_call = jax.checkpoint(partial(model, train=True), policy=policy)
    return grad(remat_call)(params, x)
  return step


LIMIT = 5 << 18  # 1.25 MiB: between the two plans' peaks
params = [np.full((64, 64), 0.01, np.float32) for _ in range(8)]
x = np.ones((512, 64), np.float32)

if __name__ == "__main__":
  print(f"device limit: {LIMIT} bytes\n")
  for policy in (dot_with_no_batch_dims_saveable, dot_with_no_batch_dims_offload):
    print(f"{policy.__name__}:")
    try:
      c = ferry.jax.jit(make_step(policy), device_memory_limit=LIMIT).lower(params, x).compile()
    except ferry.Error as e:
      print(f"  {e.code}: {e.message.splitlines()[0][:160]}...\n")
      continue
    g = c(params, x)
    m = c.memory_analysis()
    print(f"  compiles under the limit: peak {m.peak_memory_in_bytes} bytes, host_temp_size_in_bytes "
          f"{m.host_temp_size_in_bytes}, measured high-water {c.execution_stats().device_high_water_bytes}")
    ref = jax.jit(make_step(policy, jax.grad))(params, x)
    print(f"  gradients equal jax.jit's: {all(np.allclose(a, b, rtol=1e-5, atol=1e-6) for a, b in zip(g, ref))}\n")
  c = ferry.jax.jit(make_step(dot_with_no_batch_dims_offload, jax.grad)).lower(params, x).compile()
  print("with jax.grad (JAX decides): ferry warns", *c.warnings()[:1], sep="\n  ")
