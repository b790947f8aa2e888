"""The second report (seeds/001), unchanged but for the jit: grad(scan(remat(step, policy=offload)))
compiles and runs on ferry, and the per-step offload really happens (host_temp_size_in_bytes > 0).
"""
import jax
import jax.ad_checkpoint
from jax import numpy as jnp

import ferry.jax


@ferry.jax.jit
def apply(params, x):

  def step(y, i):
    y = jnp.sin(y)

    y = jax.ad_checkpoint.checkpoint_name(y, 'save_remat')

    y = jnp.sin(y)
    return y, ()

  step = jax.remat(
      step,
      policy=jax.checkpoint_policies.save_and_offload_only_these_names(
          names_which_can_be_saved=(),
          names_which_can_be_offloaded=('save_remat',),
          offload_src='device',
          offload_dst='pinned_host',
      ),
  )

  y = jax.grad(lambda p: jax.lax.scan(step, p, x)[0].sum())(params)
  return y

params = jnp.ones([3])
x = jnp.ones([2, 3])

print(apply(params, x))

if __name__ == "__main__":
  compiled = apply.lower(params, x).compile()
  print(compiled.memory_analysis())
  m = compiled.memory_analysis()
  print(f"peak_memory_in_bytes {m.peak_memory_in_bytes}, temp_size_in_bytes {m.temp_size_in_bytes}, "
        f"host_temp_size_in_bytes {m.host_temp_size_in_bytes}")
