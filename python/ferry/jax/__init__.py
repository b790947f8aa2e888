"""JAX programs on ferry: `ferry.jax.jit` in place of `jax.jit`.

    step = ferry.jax.jit(train_step, donate_argnums=(0, 1), device_memory_limit=64 << 20)
    params, opt_state, loss = step(params, opt_state, batch)
    compiled = step.lower(params, opt_state, batch).compile()
    compiled.memory_analysis().host_temp_size_in_bytes     # > 0 where residuals are offloaded

- ferry.jax.jit traces the function with JAX, converts the jaxpr to ferry's IR (one converter rule
  per JAX primitive; anything else is ferry.Error UNIMPLEMENTED naming the primitive and the source
  line), compiles once per signature and returns the function's output structure of NumPy arrays.
- ferry.jax.grad / value_and_grad / vjp: inside ferry.jax.jit, ferry differentiates (its autodiff,
  checkpoint partitioning and planner; each jax.checkpoint policy is called per equation as JAX
  calls it). Outside, they are JAX's.
- ferry.jax.distributed.initialize(), process_index(), process_count(): more than one process
  (`mpirun -np N`), as jax.distributed's; jax.shard_map over a mesh axis of N devices runs one shard
  per process, its jax.lax collectives ferry's (ferry.distributed).
- ferry.jax.automatic: a jax.checkpoint policy that lets ferry's planner choose.
- compiled.memory_html() draws a compiled program's memory plan as a page (inline in a notebook);
  ferry.jax.memory_html({"saved": a, "offloaded": b}) draws several on one scale.
"""
from ferry._errors import Error
from ferry.jax import _collectives, _control, _rules  # noqa: F401  (they register the converter rules)
from ferry.jax._ad import grad, value_and_grad, vjp
from ferry.jax._interpreter import RULES
from ferry.jax._jit import Compiled, Jitted, Lowered, jit
from ferry.jax._policies import automatic
from ferry import distributed
from ferry.distributed import process_count, process_index
from ferry.jax._tools import explain, memory_html, print_saved_residuals, save_memory_html, saved_residuals

__all__ = ["jit", "grad", "value_and_grad", "vjp", "automatic", "Compiled", "Lowered", "Jitted", "Error",
           "saved_residuals", "print_saved_residuals", "explain", "memory_html", "save_memory_html",
           "converted_primitives", "distributed", "process_index", "process_count"]


def converted_primitives():
    """The names of the JAX primitives ferry converts."""
    return sorted(RULES)
