"""safetensors files between ferry and Python's `safetensors` package (the Rust reference implementation).

  python safetensors_interop.py write FILE JSON   writes FILE with safetensors (every dtype ferry has,
                                                  metadata included) and the values it holds to JSON
  python safetensors_interop.py check FILE JSON   loads FILE with safetensors and checks it holds exactly
                                                  the dtypes, shapes, values and metadata JSON lists

tests/io/data/python_written.{safetensors,json} were made with `write` (seed 17); tests/io/interop.sh
runs both directions against a fresh ferry build when a Python with safetensors is available.
"""
import json
import sys

import ml_dtypes  # numpy's bfloat16 (comes with jax)
import numpy as np
import safetensors
from safetensors.numpy import save_file

def bf16_values(raw):
    return (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)


def make_tensors(seed):
    rng = np.random.default_rng(seed)
    t = {
        "weights/f32": rng.standard_normal((3, 4)).astype(np.float32),
        "f64 scalar": np.array(rng.standard_normal(), dtype=np.float64),
        "half": rng.standard_normal((2, 3, 2)).astype(np.float16),
        "counts": rng.integers(-1000, 1000, size=(5,)).astype(np.int32),
        "mask": rng.integers(0, 2, size=(2, 2)).astype(bool),
        "empty": np.zeros((0, 3), dtype=np.float32),
    }
    # bf16: values rounded to 8 significant bits, so that they are exact.
    b = rng.standard_normal((4, 2)).astype(np.float32)
    b = (b.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
    return t, b


def write(path, json_path, seed=17):
    tensors, bf16 = make_tensors(seed)
    tensors["bf16 weights"] = bf16.astype(ml_dtypes.bfloat16)  # exact: bf16 holds these values
    metadata = {"format": "pt", "written_by": f"safetensors {safetensors.__version__}"}
    save_file(tensors, path, metadata=metadata)
    names = {"float32": "F32", "float64": "F64", "float16": "F16", "bfloat16": "BF16", "int32": "I32", "bool": "BOOL"}
    expected = {name: {"dtype": names[a.dtype.name], "shape": list(a.shape),
                       "values": a.reshape(-1).astype(np.float64).tolist()} for name, a in tensors.items()}
    with open(json_path, "w") as f:
        json.dump({"tensors": expected, "metadata": metadata}, f, indent=1)


def check(path, json_path):
    with open(json_path) as f:
        want = json.load(f)
    with open(path, "rb") as f:
        loaded = dict(safetensors.deserialize(f.read()))
    with safetensors.safe_open(path, framework="np") as f:
        metadata = f.metadata() or {}
    errors = []
    if metadata != want.get("metadata", {}):
        errors.append(f"metadata {metadata} != {want.get('metadata')}")
    if set(loaded) != set(want["tensors"]):
        errors.append(f"names {sorted(loaded)} != {sorted(want['tensors'])}")
    for name, w in want["tensors"].items():
        if name not in loaded:
            continue
        got = loaded[name]
        if got["dtype"] != w["dtype"] or list(got["shape"]) != w["shape"]:
            errors.append(f"{name}: {got['dtype']}{got['shape']} != {w['dtype']}{w['shape']}")
            continue
        kind = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "I32": "<i4", "BOOL": "u1"}
        values = bf16_values(got["data"]) if w["dtype"] == "BF16" else np.frombuffer(got["data"], dtype=kind[w["dtype"]])
        if not np.array_equal(values.astype(np.float64), np.asarray(w["values"], dtype=np.float64)):
            errors.append(f"{name}: values differ: {values[:8]} vs {w['values'][:8]}")
    if errors:
        print("safetensors check failed:\n  " + "\n  ".join(errors))
        sys.exit(1)
    print(f"safetensors {safetensors.__version__} read {len(loaded)} tensors of {path}: dtypes, shapes, values and "
          "metadata as expected")


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("write", "check"):
        print(__doc__)
        sys.exit(2)
    (write if sys.argv[1] == "write" else check)(sys.argv[2], sys.argv[3])
