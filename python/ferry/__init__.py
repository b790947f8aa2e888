"""ferry from Python: JAX programs compiled, differentiated and memory-planned by ferry.

    import ferry.jax
    step = ferry.jax.jit(train_step)          # as jax.jit
    compiled = step.lower(params, batch).compile()
    compiled.memory_analysis()                 # JAX's field names, plus peak_memory_in_bytes

`ferry.Error` is every error ferry raises, with `.code` ("INVALID_ARGUMENT", "RESOURCE_EXHAUSTED",
"UNIMPLEMENTED", "INTERNAL").
"""
from ferry._errors import Error
from ferry import _ferry

__all__ = ["Error"]
__version__ = "0.1.0"

try:  # bf16 arrays are ml_dtypes.bfloat16 (as JAX's are)
    import ml_dtypes as _ml_dtypes
    import numpy as _np
    _ferry.set_bfloat16(_np.dtype(_ml_dtypes.bfloat16))
except ImportError:  # pragma: no cover - ml_dtypes comes with jax
    pass
