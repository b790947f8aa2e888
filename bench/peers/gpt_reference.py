"""Regenerates the JAX reference values tests/e2e/models_test.cpp checks ferry's models against
(tests/e2e/data/jax_reference.json): ferry dumps the small configurations' inputs, JAX computes
the losses and gradients of the same models (jax_models.py), and the first values and absolute
sums of each gradient are stored.

  build/bench/suite_bench --dump /tmp/dump --dump-only
  /tmp/jaxenv/bin/python bench/peers/gpt_reference.py /tmp/dump
"""
import json
import os
import sys

import jax
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from jax_models import gpt_shapes, jax_gpt_loss, jax_scan_mlp_loss  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "e2e", "data", "jax_reference.json")


def load(dump, manifest, name):
    m = manifest[name]
    dtype = {"f32": np.float32, "i32": np.int32}[m["dtype"]]
    return np.fromfile(os.path.join(dump, name + ".bin"), dtype=dtype).reshape(m["shape"])


def summary(g):
    g = np.asarray(g, dtype=np.float64).ravel()
    return {"first": [float(v) for v in g[:8]], "abs_sum": float(np.abs(g).sum())}


def main(dump):
    manifest = json.load(open(os.path.join(dump, "manifest.json")))
    ref = json.load(open(OUT))
    cfg = manifest["gpt.config"]
    names = list(gpt_shapes(cfg).keys())
    p = {n: load(dump, manifest, "gpt." + n) for n in names}
    tokens, targets = load(dump, manifest, "gpt.tokens"), load(dump, manifest, "gpt.targets")
    loss, g = jax.value_and_grad(lambda q: jax_gpt_loss(q, tokens, targets, cfg, "no checkpoint"))(p)
    ref["gpt"]["config"] = cfg
    ref["gpt"]["loss"] = float(loss)
    ref["gpt"]["grads"] = {n: summary(g[n]) for n in names}
    ref["jax_version"] = jax.__version__
    with open(OUT, "w") as f:
        json.dump(ref, f, indent=1)
    print(f"gpt loss {float(loss):.6f} (ferry {float(load(dump, manifest, 'gpt.loss')):.6f}); wrote {OUT}")


if __name__ == "__main__":
    main(sys.argv[1])
