"""The multi-process tests: run under a launcher, every process the same tests in the same order
(CTest: mpirun -np 2 ... python -m pytest python/tests/distributed, with XLA_FLAGS giving JAX as many
CPU devices as there are processes, so that jax.jit on a mesh of them is the reference). A plain
pytest run of python/tests leaves this folder out."""
import importlib.util
import os
import pathlib

_LAUNCHED = any(k in os.environ for k in ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"))
collect_ignore_glob = [] if _LAUNCHED else ["test_*.py"]

if _LAUNCHED:
    import ferry.distributed

    if not ferry.distributed.is_initialized():
        ferry.distributed.initialize(timeout=60)

# The suite's helpers (python/tests/conftest.py), under the names the tests import from conftest.
_spec = importlib.util.spec_from_file_location("_ferry_test_helpers", pathlib.Path(__file__).parents[1] / "conftest.py")
_helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_helpers)
assert_trees_close, check_invariants = _helpers.assert_trees_close, _helpers.check_invariants
