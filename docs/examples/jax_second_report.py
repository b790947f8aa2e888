"""The README's Python program (From JAX), whole: the README quotes it from `import jax` to the last
print, and docs.snippets checks that it still does and that it prints what the README shows. A test
(docs.jax_second_report, where the build has the Python package): it fails unless the offload happens.
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
  step = jax.remat(step, policy=jax.checkpoint_policies.save_and_offload_only_these_names(
      names_which_can_be_saved=(), names_which_can_be_offloaded=('save_remat',),
      offload_src='device', offload_dst='pinned_host'))
  return jax.grad(lambda p: jax.lax.scan(step, p, x)[0].sum())(params)

params, x = jnp.ones([3]), jnp.ones([2, 3])
print(apply(params, x))
print(apply.lower(params, x).compile().memory_analysis())

assert apply.lower(params, x).compile().memory_analysis().host_temp_size_in_bytes > 0, "the offload did not happen"
