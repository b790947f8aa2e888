"""The JAX-bridge rows of the peers benchmark: the same JAX training steps (the scan MLP and the GPT
of jax_models.py) under jax.jit and under ferry.jax.jit, interleaved in one run.

Rows: step time (median of interleaved rounds), device peak (ferry's memory_analysis() against
JAX's argument + output + temp - alias), an offload row (the GPT with its names offloaded: JAX's CPU
backend ignores the offload, ferry's peak drops), and the cost of a cached call of a tiny jitted
function against jax.jit's dispatch. Needs the ferry package (python/.venv):

    python/.venv/bin/python bench/peers/ferry_jax.py [--quick] [--repeats N] [--markdown FILE]
"""
import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import ferry.jax  # noqa: E402
from jax_models import gpt_shapes, jax_gpt_loss, jax_scan_mlp_loss  # noqa: E402


def sgd(grad):
    def step(params, *batch):
        loss, g = grad(params, *batch)
        return jax.tree_util.tree_map(lambda p, gi: p - 1e-3 * gi, params, g), loss
    return step


def scan_mlp(quick, policy, grad_fn):
    B, W, L = (256, 128, 4) if quick else (1024, 256, 8)
    rng = np.random.default_rng(0)
    w = (rng.normal(0, W ** -0.5, (L, W, W)).astype(np.float32), rng.normal(0, W ** -0.5, (L, W, W)).astype(np.float32))
    x = rng.normal(0, 1, (B, W)).astype(np.float32)
    loss = lambda w, x: jax_scan_mlp_loss(x, w[0], w[1], policy)
    return sgd(grad_fn(loss)), (w, x), f"scan_mlp {B}x{W}x{L}"


def gpt(quick, policy, grad_fn):
    cfg = dict(batch=4, seq=32, d_model=64, heads=4, vocab=128, layers=2) if quick else \
        dict(batch=8, seq=128, d_model=128, heads=4, vocab=512, layers=4)
    rng = np.random.default_rng(0)
    p = {k: rng.normal(0, 0.02, s).astype(np.float32) for k, s in gpt_shapes(cfg).items()}
    for k in ("ln1_g", "ln2_g", "ln_f_g"):
        p[k] = np.ones_like(p[k])
    tokens = rng.integers(1, cfg["vocab"], (cfg["batch"], cfg["seq"])).astype(np.int32)
    targets = rng.integers(1, cfg["vocab"], (cfg["batch"], cfg["seq"])).astype(np.int32)
    loss = lambda p, t, y: jax_gpt_loss(p, t, y, cfg, policy)
    return sgd(grad_fn(loss)), (p, tokens, targets), f"gpt {cfg['layers']}x{cfg['d_model']} seq {cfg['seq']}"


def jax_peak(compiled):
    m = compiled.memory_analysis()
    return m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes - m.alias_size_in_bytes, \
        m.host_temp_size_in_bytes


def interleaved(fns, repeats):
    for f in fns.values():
        f()
    times = {k: [] for k in fns}
    names = list(fns)
    for r in range(repeats):
        for k in names[r % len(names):] + names[:r % len(names)]:
            t = time.perf_counter()
            fns[k]()
            times[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def step_rows(quick, repeats):
    rows = []
    for make, policy in ((scan_mlp, "no checkpoint"), (gpt, "no checkpoint"), (gpt, "names offloaded")):
        step_j, args, label = make(quick, policy, jax.value_and_grad)
        step_f, _, _ = make(quick, policy, ferry.jax.value_and_grad)
        jj = jax.jit(step_j)
        jargs = jax.tree_util.tree_map(jnp.asarray, args)
        fj = ferry.jax.jit(step_f)
        fc = fj.lower(*args).compile()
        jc = jj.lower(*jargs).compile()
        med = interleaved({"jax": lambda: jax.block_until_ready(jj(*jargs)), "ferry": lambda: fc(*args)}, repeats)
        jpeak, jhost = jax_peak(jc)
        fm = fc.memory_analysis()
        assert fc.execution_stats().device_high_water_bytes == fm.peak_memory_in_bytes
        got, want = fc(*args)[1], jj(*jargs)[1]
        rows.append((label, policy, med["ferry"], med["jax"], fm.peak_memory_in_bytes, jpeak,
                     fm.host_temp_size_in_bytes, jhost, abs(float(got) - float(want))))
    return rows


def dispatch_row(loops=20000, rounds=7):
    f = lambda x: x * 2.0 + 1.0
    jj, fj = jax.jit(f), ferry.jax.jit(f)
    xj, xn = jnp.ones(4, jnp.float32), np.ones(4, np.float32)
    jj(xj).block_until_ready()
    fj(xn)
    best = {"jax": 1e9, "ferry": 1e9}
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(loops):
            y = jj(xj)
        y.block_until_ready()
        best["jax"] = min(best["jax"], (time.perf_counter() - t) / loops)
        t = time.perf_counter()
        for _ in range(loops):
            fj(xn)
        best["ferry"] = min(best["ferry"], (time.perf_counter() - t) / loops)
    return best


def markdown(rows, dispatch, repeats):
    mib = lambda b: f"{b / 2 ** 20:.2f}"
    lines = ["", "## JAX programs on ferry: `ferry.jax.jit` beside `jax.jit` (CPU), from one run", "",
             f"JAX {jax.__version__}. The steps of `bench/peers/jax_models.py` with an SGD update, `jax.jit` with "
             "`jax.value_and_grad` against `ferry.jax.jit` with `ferry.jax.value_and_grad` (ferry differentiates); "
             f"step times are medians of {repeats} interleaved rounds. Device peak: ferry's "
             "`memory_analysis().peak_memory_in_bytes` (equal to the measured high-water) against JAX's argument + "
             "output + temp - alias. Command: `python/.venv/bin/python bench/peers/ferry_jax.py`.", "",
             "| step | policy | ferry ms | JAX ms | ferry/JAX | ferry peak MiB | JAX peak MiB | ferry host MiB | "
             "JAX host MiB | loss diff |", "|---|---|---|---|---|---|---|---|---|---|"]
    for label, policy, fs, js, fp, jp, fh, jh, diff in rows:
        lines.append(f"| {label} | {policy} | {fs * 1e3:.2f} | {js * 1e3:.2f} | {fs / js:.2f} | {mib(fp)} | {mib(jp)} | "
                     f"{mib(fh)} | {mib(jh)} | {diff:.1e} |")
    lines += ["", f"Cached call of a tiny jitted function (`x * 2 + 1` on f32[4], best of 7 loops): ferry "
              f"{dispatch['ferry'] * 1e6:.2f} us, jax.jit {dispatch['jax'] * 1e6:.2f} us, ratio "
              f"{dispatch['ferry'] / dispatch['jax']:.2f}.", ""]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--markdown")
    args = ap.parse_args()
    rows = step_rows(args.quick, args.repeats)
    text = markdown(rows, dispatch_row(), args.repeats)
    print(text)
    if args.markdown:
        with open(args.markdown, "a") as f:
            f.write(text)


if __name__ == "__main__":
    main()
