"""More than one process, named as in JAX (jax.distributed): `initialize()` joins the processes a
launcher started (`mpirun -np 2 python train.py`), and `process_index()` / `process_count()` say which
one this is and how many there are.

    import ferry.distributed
    ferry.distributed.initialize()             # once, before the first ferry.jax.jit call
    ferry.distributed.process_index()          # 0 or 1 under mpirun -np 2

initialize() also gives JAX's CPU backend one device per process (where JAX has not started yet),
as jax.distributed.initialize makes jax.devices() every process's, so that a mesh over
jax.devices() has a position per process. Inside `ferry.jax.jit`, a `jax.shard_map` over a mesh
axis whose size is `process_count()` runs one shard per process: jax.lax.psum / pmean / all_gather / psum_scatter / axis_index over that axis are
ferry's collectives over the processes (Open MPI). Every process must call the jitted function with
the same arguments' shapes; a process that stops taking part makes the others raise ferry.Error
with code "UNAVAILABLE" within `timeout` seconds instead of hanging.
"""
import os

from ferry import _ferry
from ferry._errors import Error, invalid_argument

__all__ = ["initialize", "is_initialized", "process_index", "process_count", "axis_name"]


def initialize(axis_name="data", timeout=300.0, *, num_processes=None, process_id=None):
    """Joins this launch's processes (MPI). Raises ferry.Error INVALID_ARGUMENT where no launcher
    started this process (the message says how to launch one) or where it already joined, and
    UNIMPLEMENTED in a build without MPI. `timeout` (seconds) bounds every wait for the others.
    The launcher says how many processes there are and which one this is; `num_processes` and
    `process_id` (jax.distributed.initialize's names), where given, must agree with it."""
    if not isinstance(axis_name, str) or not axis_name:
        raise invalid_argument(f"ferry.distributed.initialize: axis_name must be a non-empty string, not {axis_name!r}")
    try:
        timeout = float(timeout)
    except (TypeError, ValueError):
        raise invalid_argument(f"ferry.distributed.initialize: timeout must be a number of seconds, not {timeout!r}") from None
    _ferry.initialize(axis_name, timeout)
    _one_jax_device_per_process(_ferry.process_count())
    for name, given, actual in (("num_processes", num_processes, _ferry.process_count()),
                                ("process_id", process_id, _ferry.process_index())):
        if given is not None and given != actual:
            raise invalid_argument(f"ferry.distributed.initialize: {name}={given!r}, but the launcher started "
                                   f"this process with {name}={actual} (ferry takes both from the launcher)")


def is_initialized():
    """Whether initialize() has been called in this process."""
    return _ferry.is_initialized()


def process_index():
    """This process's index in [0, process_count()); 0 before initialize()."""
    return _ferry.process_index()


def process_count():
    """The number of processes; 1 before initialize()."""
    return _ferry.process_count()


def axis_name():
    """The name of ferry's axis over the processes ("data" unless initialize() was given another)."""
    return _ferry.axis_name()


def _one_jax_device_per_process(n):
    """As jax.distributed.initialize makes jax.devices() every process's devices, JAX's CPU backend
    gets n devices here, so that a mesh over jax.devices() (jax.make_mesh((n,), ...)) has a
    position per process and jax.jit of the same shard_map is the reference on every process. Only
    where JAX's backend has not started (its devices are fixed then) and no count was asked for."""
    if n <= 1 or "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", ""):
        return
    try:
        import jax
        from jax._src import xla_bridge
    except ImportError:  # pragma: no cover - jax is a dependency of the package
        return
    if jax.config.jax_num_cpu_devices == -1 and not xla_bridge.backends_are_initialized():
        jax.config.update("jax_num_cpu_devices", n)
