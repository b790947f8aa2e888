"""ferry's GPU rows (bench/gpu_bench --json) beside JAX's on the same GPU, for bench/gpu/run.

Runs gpt's Adam training step and scan_mlp's gradient under the same policies (the models of
bench/peers/jax_models.py, written as ferry's examples/models/models.cpp) with jax.jit, reads
compiled.memory_analysis() (HBM peak = arguments + outputs + temporaries - aliased, as ferry's
MemoryStats) and times the median step, then prints one table: HBM peak and step time of each and
their ratios (ferry / JAX), the offload overhead against saving the same names, and the copy
bandwidth ferry's copy engine reached against cudaMemcpyAsync.

  python3 bench/gpu/compare.py --ferry rows.json [--platform gpu] [--repeats 10] [--markdown out.md]

--platform cpu runs the JAX side on the CPU (to check this script without a GPU; the figures are
then not comparable with ferry's GPU rows).
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers"))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from jax_models import GPT_NAMES, gpt_shapes, jax_gpt_loss, jax_scan_mlp_loss  # noqa: E402

# ferry's "automatic" has no JAX counterpart: its JAX cells stay empty.
JAX_POLICIES = {"no checkpoint", "nothing_saveable", "names saved", "names offloaded"}


def adam(p, g, m, v, t, lr=3e-3, b1=0.9, b2=0.999, eps=1e-8):
    t = t + 1.0
    m = jax.tree_util.tree_map(lambda mi, gi: mi * b1 + gi * (1 - b1), m, g)
    v = jax.tree_util.tree_map(lambda vi, gi: vi * b2 + gi * gi * (1 - b2), v, g)
    c1, c2 = 1 - b1 ** t, 1 - b2 ** t
    p = jax.tree_util.tree_map(lambda pi, mi, vi: pi - (mi / c1) / (jnp.sqrt(vi / c2) + eps) * lr, p, m, v)
    return p, m, v, t


def median_time(f, repeats):
    f()  # compile and warm up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run_jax(model, cfg, policy, repeats, device):
    rng = np.random.default_rng(0)
    put = lambda a: jax.device_put(a, device)  # noqa: E731
    if model == "scan_mlp":
        x = put(rng.standard_normal((cfg["batch"], cfg["width"]), dtype=np.float32))
        w1 = put(rng.standard_normal((cfg["layers"], cfg["width"], cfg["hidden"]), dtype=np.float32) * 0.06)
        w2 = put(rng.standard_normal((cfg["layers"], cfg["hidden"], cfg["width"]), dtype=np.float32) * 0.03)
        f = jax.jit(jax.value_and_grad(lambda w, x: jax_scan_mlp_loss(x, w[0], w[1], policy)))
        args = ((w1, w2), x)
    else:
        p = {n: put(rng.standard_normal(s, dtype=np.float32) * 0.05) for n, s in gpt_shapes(cfg).items()}
        zeros = jax.tree_util.tree_map(jnp.zeros_like, p)
        tokens = put(rng.integers(1, cfg["vocab"], (cfg["batch"], cfg["seq"]), dtype=np.int32))

        def step(p, m, v, t, tokens, targets):
            loss, g = jax.value_and_grad(lambda q: jax_gpt_loss(q, tokens, targets, cfg, policy))(p)
            return (loss,) + adam(p, g, m, v, t)
        # ferry's step donates params, m, v and the count (jit's donate_argnums 0-3): so does JAX's.
        f = jax.jit(step, donate_argnums=(0, 1, 2, 3))
        args = (p, zeros, zeros, jnp.float32(0), tokens, tokens)
    compiled = f.lower(*args).compile()
    mem = compiled.memory_analysis()
    row = {}
    if mem is not None:
        get = lambda name: getattr(mem, name, 0) or 0  # noqa: E731
        row["temp_bytes"] = get("temp_size_in_bytes")
        row["peak_bytes"] = (get("argument_size_in_bytes") + get("output_size_in_bytes") + get("temp_size_in_bytes")
                             - get("alias_size_in_bytes"))
        row["host_temp_bytes"] = get("host_temp_size_in_bytes")

    def call():
        # Fresh copies of the donated arguments each call (untimed in ferry too: gpu_bench copies
        # its arguments to the GPU before starting the clock).
        a = jax.tree_util.tree_map(jnp.copy, args) if model == "gpt" else args
        jax.block_until_ready(a)
        start = time.perf_counter()
        jax.block_until_ready(compiled(*a))
        return time.perf_counter() - start

    call()
    row["step_seconds"] = statistics.median(call() for _ in range(repeats))
    return row


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "-"


def mib(b):
    return f"{b / 1048576:.2f}" if b else "-"


def ms(s):
    return f"{s * 1e3:.3f}" if s else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ferry", required=True, help="bench/gpu_bench --json output")
    ap.add_argument("--platform", default="gpu", choices=["gpu", "cpu"])
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--markdown", help="also write the table here")
    a = ap.parse_args()
    with open(a.ferry) as f:
        ferry = json.load(f)
    device = jax.devices(a.platform)[0]
    print(f"JAX {jax.__version__} on {device.device_kind} ({a.platform}); ferry on {ferry.get('gpu', '?')}")
    lines = ["| model | policy | ferry HBM peak MiB | JAX HBM peak MiB | peak ratio | ferry step ms | JAX step ms | "
             "time ratio |", "|---|---|---|---|---|---|---|---|"]
    steps = {}
    for row in ferry["rows"]:
        model, policy = row["model"], row["policy"]
        cfg = ferry["gpt_config"] if model == "gpt" else ferry["scan_mlp_config"]
        j = run_jax(model, cfg, policy, a.repeats, device) if policy in JAX_POLICIES else {}
        fp, fs = row.get("planned_peak_bytes"), row.get("step_seconds")
        steps[(model, policy)] = (fs, j.get("step_seconds"))
        if "error" in row:
            lines.append(f"| {model} | {policy} | {row['error']} | {mib(j.get('peak_bytes'))} | - | - | "
                         f"{ms(j.get('step_seconds'))} | - |")
            continue
        lines.append(f"| {model} | {policy} | {mib(fp)} | {mib(j.get('peak_bytes'))} | {ratio(fp, j.get('peak_bytes'))} | "
                     f"{ms(fs)} | {ms(j.get('step_seconds'))} | {ratio(fs, j.get('step_seconds'))} |")
    lines.append("")
    lines.append("Offload overhead (names offloaded / names saved, step time): " + ", ".join(
        f"{m}: ferry {ratio(steps.get((m, 'names offloaded'), (0, 0))[0], steps.get((m, 'names saved'), (0, 0))[0])}, "
        f"JAX {ratio(steps.get((m, 'names offloaded'), (0, 0))[1], steps.get((m, 'names saved'), (0, 0))[1])}"
        for m in ("gpt", "scan_mlp")))
    for direction, c in ferry.get("copies", {}).items():
        lines.append(f"Copy {direction}: ferry {c['ferry_gb_per_s']:.2f} GB/s, cudaMemcpyAsync {c['cuda_gb_per_s']:.2f} "
                     f"GB/s ({c['ferry_gb_per_s'] / c['cuda_gb_per_s']:.2f}x)")
    text = "\n".join(lines)
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
