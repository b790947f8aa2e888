"""Reference values for ferry's optimizers, from optax: AdamW with decoupled weight decay (one leaf
masked out of the decay), clipping by global norm, and a warmup + cosine learning-rate schedule read
at the optimizer's count, for several steps on fixed gradients. Writes
tests/transforms/data/optax_reference.json (float32 throughout, as the C++ test runs).

  python optax_reference.py [OUT.json]
"""
import json
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax

SEED = 17
STEPS = 8
CONFIG = dict(init_value=0.0, peak_value=0.05, warmup_steps=3, decay_steps=7, end_value=0.005,
              b1=0.9, b2=0.99, eps=1e-6, weight_decay=0.1, max_norm=1.5)


def main(out):
    rng = np.random.default_rng(SEED)
    params = {"w": rng.standard_normal((3, 4)).astype(np.float32),
              "b": rng.standard_normal((4,)).astype(np.float32),
              "scale": np.array(rng.standard_normal(), dtype=np.float32)}
    # Gradients of growing size, so clipping acts on some steps and not on others.
    grads = [{k: (rng.standard_normal(v.shape) * (0.2 + 0.3 * step)).astype(np.float32) for k, v in params.items()}
             for step in range(STEPS)]
    c = CONFIG
    schedule = optax.warmup_cosine_decay_schedule(c["init_value"], c["peak_value"], c["warmup_steps"],
                                                  c["decay_steps"], c["end_value"])
    mask = {"w": True, "b": False, "scale": True}  # the bias does not decay
    opt = optax.chain(optax.clip_by_global_norm(c["max_norm"]),
                      optax.adamw(schedule, b1=c["b1"], b2=c["b2"], eps=c["eps"], weight_decay=c["weight_decay"],
                                  mask=mask))
    p = jax.tree.map(jnp.asarray, params)
    state = opt.init(p)
    steps = []
    for step in range(STEPS):
        g = jax.tree.map(jnp.asarray, grads[step])
        norm = optax.global_norm(g)
        lr = schedule(step)
        updates, state = opt.update(g, state, p)
        p = optax.apply_updates(p, updates)
        adam = state[1][0]  # chain(clip, adamw=chain(scale_by_adam, add_decayed_weights, scale_by_lr))
        steps.append({"grads": {k: np.asarray(v).reshape(-1).tolist() for k, v in grads[step].items()},
                      "norm": float(norm), "lr": float(lr),
                      "params": {k: np.asarray(v).reshape(-1).tolist() for k, v in p.items()},
                      "mu": {k: np.asarray(v).reshape(-1).tolist() for k, v in adam.mu.items()},
                      "nu": {k: np.asarray(v).reshape(-1).tolist() for k, v in adam.nu.items()},
                      "count": int(adam.count)})
    doc = {"optax": optax.__version__, "jax": jax.__version__, "config": c,
           "shapes": {k: list(v.shape) for k, v in params.items()},
           "params": {k: v.reshape(-1).tolist() for k, v in params.items()},
           "decay": mask, "steps": steps,
           "schedule": [float(schedule(i)) for i in range(12)]}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/transforms/data/optax_reference.json")
