"""Faults between processes from Python, each a mode of this script run under `mpirun -np 2` by
CTest (python.fault_*), as tests/distributed/faults_main.cpp does for C++: every process runs a
jitted shard_map step once with the others, then
  killed_peer         process 1 is killed (SIGKILL) before the second step: process 0 raises
                      ferry.Error UNAVAILABLE naming the collective within the timeout (2 s here);
  different_programs  process 1 traced the step for an argument of another shape: both raise
                      ferry.Error INVALID_ARGUMENT at the first call, naming the argument (as the
                      program takes it: this process's block of the batch).
Process 0 prints one line that CTest matches; each process exits 0 only where it got what its mode
expects."""
import os
import signal
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import AbstractMesh, PartitionSpec as P  # noqa: E402

import ferry  # noqa: E402
import ferry.distributed  # noqa: E402
import ferry.jax  # noqa: E402

mode = sys.argv[1]
ferry.distributed.initialize(timeout=2.0)
me, n = ferry.distributed.process_index(), ferry.distributed.process_count()
mesh = jax.sharding.Mesh(np.array(jax.devices()[:n]), ("data",))
step = ferry.jax.jit(jax.shard_map(lambda x: jax.lax.psum(x * 2.0, "data"), mesh=mesh,
                                   in_specs=P("data"), out_specs=P()))
rows = 5 if mode == "different_programs" and me == 1 else 4
x = jnp.ones((rows * n, 3))


def call():
    start = time.monotonic()
    try:
        step(x)
        return None, time.monotonic() - start
    except ferry.Error as e:
        return e, time.monotonic() - start


first, _ = call()
ok = False
if mode == "different_programs":
    print(f"process {me}: {first}", flush=True)
    ok = first is not None and first.code == "INVALID_ARGUMENT" and "argument 0" in first.message \
        and "process 1" in first.message
elif first is None:
    if me == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    second, seconds = call()
    print(f"process {me}: {second} (after {seconds:.1f} s)", flush=True)
    ok = second is not None and second.code == "UNAVAILABLE" and "psum" in second.message and 1.5 <= seconds < 30
else:
    print(f"process {me}: the first step failed: {first}", flush=True)
sys.exit(0 if ok else 1)
