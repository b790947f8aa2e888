"""ferry's benchmark rows beside JAX's and PyTorch's (CPU) on the same models and policies.

Reads the rows bench/suite_bench wrote (--json), runs the same models under JAX
(jax.checkpoint policies, compiled memory_analysis() temp size, median step time) and PyTorch
(torch.utils.checkpoint / selective checkpointing / save_on_cpu, bytes saved for backward, median
step time), checks ferry's gradients against JAX's on the small configurations bench/suite_bench
dumped (--dump), prints everything side by side with ratios, and appends it to BENCHMARKS.md.
"""
import argparse
import json
import math
import os
import platform
import statistics
import time

import numpy as np

import jax
import jax.numpy as jnp
import torch
import torch.utils.checkpoint as tcp

jax.config.update("jax_platforms", "cpu")



# The JAX models (as ferry's models.cpp) live in jax_models.py, shared with gpt_reference.py.
from jax_models import GPT_NAMES, POLICIES, gpt_shapes, jax_gpt_loss, jax_scan_mlp_loss  # noqa: E402


def adam(p, g, m, v, t, lr=3e-3, b1=0.9, b2=0.999, eps=1e-8):
    t = t + 1.0
    m = jax.tree_util.tree_map(lambda mi, gi: mi * b1 + gi * (1 - b1), m, g)
    v = jax.tree_util.tree_map(lambda vi, gi: vi * b2 + gi * gi * (1 - b2), v, g)
    c1, c2 = 1 - b1 ** t, 1 - b2 ** t
    p = jax.tree_util.tree_map(lambda pi, mi, vi: pi - (mi / c1) / (jnp.sqrt(vi / c2) + eps) * lr, p, m, v)
    return p, m, v, t


def timed(f, setup=None):
    """A function that runs f() once, or f(setup()) with setup() run untimed first (fresh arguments
    for a step that consumes its donated ones), and returns the seconds f took."""
    def once():
        x = setup() if setup else None
        start = time.perf_counter()
        f(x) if setup else f()
        return time.perf_counter() - start
    return once


def interleaved_medians(steps, repeats, pause=0.05):
    """Median seconds of each of `steps` (name -> a function that runs one step and returns its
    seconds), measured in rounds: every round runs each step once, in an order rotated from round to
    round, so that every framework's samples come from the same seconds. This VM's speed drifts by up
    to 2x from one minute to the next; medians measured minutes apart compare the minutes, not the
    frameworks. Each step is warmed up once first; the short pause lets a framework's spinning worker
    threads go idle before the next one starts."""
    names = list(steps)
    for name in names:
        steps[name]()
        time.sleep(pause)
    times = {name: [] for name in names}
    for r in range(repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            times[name].append(steps[name]())
            time.sleep(pause)
    return {name: statistics.median(t) for name, t in times.items()}


class FerrySteps:
    """ferry's steps, run one at a time by `suite_bench --serve` (see serve() in suite_bench.cpp)."""

    def __init__(self, suite_bench, quick):
        import subprocess
        cmd = [suite_bench, "--serve"] + (["--quick"] if quick else [])
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def ask(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline().strip()
        if not reply or reply.startswith("error"):
            raise RuntimeError(f"suite_bench --serve: {line!r} -> {reply!r}")
        return reply

    def load(self, model, policy):
        self.ask(f"load {model} {policy}")
        return lambda: float(self.ask("step"))

    def close(self):
        self.proc.stdin.write("quit\n")
        self.proc.stdin.close()
        self.proc.wait()


def run_jax(model, cfg, policy_name):
    """The compiled step's temporaries and a function that runs one step (see timed())."""
    rng = np.random.default_rng(0)
    if model == "scan_mlp":
        x = jnp.asarray(rng.standard_normal((cfg["batch"], cfg["width"]), dtype=np.float32))
        w1 = jnp.asarray(rng.standard_normal((cfg["layers"], cfg["width"], cfg["hidden"]), dtype=np.float32) * 0.06)
        w2 = jnp.asarray(rng.standard_normal((cfg["layers"], cfg["hidden"], cfg["width"]), dtype=np.float32) * 0.03)
        f = jax.jit(jax.value_and_grad(lambda w, x: jax_scan_mlp_loss(x, w[0], w[1], policy_name)))
        args = ((w1, w2), x)
    else:
        p = {n: jnp.asarray(rng.standard_normal(s, dtype=np.float32) * 0.05) for n, s in gpt_shapes(cfg).items()}
        zeros = jax.tree_util.tree_map(jnp.zeros_like, p)
        tokens = jnp.asarray(rng.integers(1, cfg["vocab"], (cfg["batch"], cfg["seq"]), dtype=np.int32))

        def step(p, m, v, t, tokens, targets):
            loss, g = jax.value_and_grad(lambda q: jax_gpt_loss(q, tokens, targets, cfg, policy_name))(p)
            return (loss,) + adam(p, g, m, v, t)
        # ferry's step (compile_gpt_train_step) donates params, m, v and the step count and writes
        # their updates into the same buffers; the same donation here, so that both compile the
        # same contract. Undonated, XLA places temporaries in the output buffers until Adam writes
        # them (73 MiB of room that ferry's donated step does not have): its temporaries would
        # measure a different program.
        f = jax.jit(step, donate_argnums=(0, 1, 2, 3))
        args = (p, zeros, zeros, jnp.float32(0), tokens, tokens)
    compiled = f.lower(*args).compile()
    mem = compiled.memory_analysis()
    temp = getattr(mem, "temp_size_in_bytes", None) if mem is not None else None
    host_temp = getattr(mem, "host_temp_size_in_bytes", None) if mem is not None else None
    if model == "scan_mlp":
        step = timed(lambda: jax.block_until_ready(compiled(*args)))
    else:  # each call consumes its donated arguments: fresh copies, made untimed
        fresh = lambda: jax.block_until_ready(jax.tree_util.tree_map(jnp.copy, args))
        step = timed(lambda a: jax.block_until_ready(compiled(*a)), setup=fresh)
    return {"temp_bytes": temp, "host_temp_bytes": host_temp}, step


# ---------------------------------------------------------------- PyTorch models

def torch_checkpointed(f, policy_name):
    if policy_name == "no checkpoint":
        return f
    if policy_name in ("offload_dot_with_no_batch_dims", "names offloaded"):
        def offloaded(*args):
            with torch.autograd.graph.save_on_cpu(pin_memory=False):
                return f(*args)
        return offloaded
    if policy_name == "nothing_saveable":
        return lambda *args: tcp.checkpoint(f, *args, use_reentrant=False)
    if policy_name in ("dots_saveable", "dots_with_no_batch_dims_saveable"):
        ops = {torch.ops.aten.mm.default, torch.ops.aten.addmm.default}
        if policy_name == "dots_saveable":
            ops |= {torch.ops.aten.bmm.default}

        def policy_fn(ctx, op, *args, **kwargs):
            return tcp.CheckpointPolicy.MUST_SAVE if op in ops else tcp.CheckpointPolicy.PREFER_RECOMPUTE
        ctx = lambda: tcp.create_selective_checkpoint_contexts(policy_fn)
        return lambda *args: tcp.checkpoint(f, *args, use_reentrant=False, context_fn=ctx)
    return None  # names: PyTorch has no names to select by


def run_torch(model, cfg, policy_name):
    """The bytes one step saves for backward (measured by the first run) and a function that runs
    one step (see timed()), or None where PyTorch has no counterpart of the policy."""
    torch.manual_seed(0)
    if model == "scan_mlp":
        x = torch.randn(cfg["batch"], cfg["width"])
        w1 = (torch.randn(cfg["layers"], cfg["width"], cfg["hidden"]) * 0.06).requires_grad_()
        w2 = (torch.randn(cfg["layers"], cfg["hidden"], cfg["width"]) * 0.03).requires_grad_()
        layer = torch_checkpointed(lambda h, a, b: (h @ a) @ b, policy_name)
        if layer is None:
            return None

        def loss_fn():
            h = x
            for l in range(cfg["layers"]):
                h = layer(h, w1[l], w2[l])
            return h.sum()
        params = [w1, w2]
    else:
        B, S, D, H, V = cfg["batch"], cfg["seq"], cfg["d_model"], cfg["heads"], cfg["vocab"]
        Dh = D // H
        p = {n: (torch.randn(*s) * 0.05).requires_grad_() for n, s in gpt_shapes(cfg).items()}
        tokens = torch.randint(1, V, (B, S))
        mask = torch.tril(torch.ones(S, S, dtype=torch.bool))

        rate = cfg.get("dropout", 0.1)
        drop = lambda t: torch.nn.functional.dropout(t, p=rate, training=True)  # PyTorch's RNG: same model, other masks

        def block(h, ln1_g, ln1_b, wq, wk, wv, wo, ln2_g, ln2_b, w_in, b_in, w_out, b_out):
            a = torch.nn.functional.layer_norm(h, (D,), ln1_g, ln1_b, 1e-5)
            heads = lambda t: t.reshape(B, S, H, Dh).transpose(1, 2)
            q, k, v = heads(a @ wq), heads(a @ wk), heads(a @ wv)
            scores = (q @ k.transpose(-1, -2)) / math.sqrt(Dh)
            attn = drop(torch.softmax(scores.masked_fill(~mask, -1e9), dim=-1))
            o = (attn @ v).transpose(1, 2).reshape(B, S, D)
            h = h + drop(o @ wo)
            m = torch.nn.functional.layer_norm(h, (D,), ln2_g, ln2_b, 1e-5)
            m = torch.nn.functional.gelu(m @ w_in + b_in, approximate="tanh")
            return h + drop(m @ w_out + b_out)
        block = torch_checkpointed(block, policy_name)
        if block is None:
            return None
        names = ["ln1_g", "ln1_b", "wq", "wk", "wv", "wo", "ln2_g", "ln2_b", "w_in", "b_in", "w_out", "b_out"]

        def loss_fn():
            x = p["embed"][tokens] + p["pos"]
            for l in range(cfg["layers"]):
                x = block(x, *[p[n][l] for n in names])
            logits = torch.nn.functional.layer_norm(x, (D,), p["ln_f_g"], p["ln_f_b"], 1e-5) @ p["unembed"]
            return torch.nn.functional.cross_entropy(logits.reshape(-1, V), tokens.reshape(-1))
        params = list(p.values())
    opt = torch.optim.Adam(params, lr=3e-3)
    saved = [0]

    def pack(t):
        saved[0] += t.numel() * t.element_size()
        return t

    def step():
        saved[0] = 0
        opt.zero_grad()
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = loss_fn()
        loss.backward()
        opt.step()
    step()
    return {"saved_bytes": saved[0]}, timed(step)


# ---------------------------------------------------------------- gradients against JAX

def load(dump, manifest, name):
    m = manifest[name]
    dtype = {"f32": np.float32, "i32": np.int32}[m["dtype"]]
    return np.fromfile(os.path.join(dump, name + ".bin"), dtype=dtype).reshape(m["shape"])


def check_gradients(dump):
    manifest = json.load(open(os.path.join(dump, "manifest.json")))
    results = {}
    x, w1, w2 = (load(dump, manifest, "scan_mlp." + n) for n in ("x", "w1", "w2"))
    loss, (g1, g2) = jax.value_and_grad(lambda w: jax_scan_mlp_loss(x, w[0], w[1], "no checkpoint"))((w1, w2))
    want = {"loss": loss, "dw1": g1, "dw2": g2}
    results["scan_mlp"] = max(rel_err(load(dump, manifest, "scan_mlp." + k), np.asarray(v)) for k, v in want.items())
    cfg = manifest["gpt.config"]
    names = list(gpt_shapes(cfg).keys())
    p = {n: load(dump, manifest, "gpt." + n) for n in names}
    tokens, targets = load(dump, manifest, "gpt.tokens"), load(dump, manifest, "gpt.targets")
    loss, g = jax.value_and_grad(lambda q: jax_gpt_loss(q, tokens, targets, cfg, "no checkpoint"))(p)
    errs = [rel_err(load(dump, manifest, "gpt.loss"), np.asarray(loss))]
    errs += [rel_err(load(dump, manifest, "gpt.d_" + n), np.asarray(g[n])) for n in names]
    results["gpt"] = max(errs)
    return results


def rel_err(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))


# ---------------------------------------------------------------- the table

def mib(b):
    return "n/a" if b is None else f"{b / 1048576:.2f}"


def ms(seconds):
    return "n/a" if seconds is None else f"{seconds * 1e3:.1f}"


def ratio(a, b):
    return "n/a" if a is None or b in (None, 0) else f"{a / b:.2f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ferry", required=True)
    ap.add_argument("--dump", required=True)
    ap.add_argument("--markdown", required=True)
    ap.add_argument("--suite-bench", required=True, help="build/bench/suite_bench, which runs ferry's steps (--serve)")
    ap.add_argument("--ferry-jax-python", help="a Python with the ferry package (python/.venv/bin/python): appends "
                    "the ferry.jax.jit rows of ferry_jax.py, run in it")
    args = ap.parse_args()
    ferry = json.load(open(args.ferry))
    repeats = ferry["repeats"]
    lines = ["| model | policy | ferry temp (MiB) | JAX temp (MiB) | ferry/JAX temp | ferry step (ms) | JAX step (ms) "
             "| ferry/JAX step | PyTorch step (ms) | ferry/PyTorch step | PyTorch saved (MiB) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    ferry_steps = FerrySteps(args.suite_bench, ferry.get("quick", False))
    for row in ferry["rows"]:
        model, policy = row["model"], row["policy"]
        cfg = ferry["configs"][model]
        steps = {"ferry": ferry_steps.load(model, policy)}
        try:
            j, steps["jax"] = run_jax(model, cfg, policy)
        except Exception as e:  # a policy this JAX build cannot compile on CPU
            j = {"temp_bytes": None, "error": str(e).splitlines()[0][:80]}
        try:
            t, steps["torch"] = run_torch(model, cfg, policy) or (None, None)
        except Exception:
            t = None
        steps = {k: v for k, v in steps.items() if v is not None}
        medians = interleaved_medians(steps, repeats)
        j["step_seconds"] = medians.get("jax")
        t = t or {"saved_bytes": None}
        t["step_seconds"] = medians.get("torch")
        fs = medians["ferry"]
        line = (f"| {model} | {policy} | {mib(row['temp_bytes'])} | {mib(j['temp_bytes'])} | "
                f"{ratio(row['temp_bytes'], j['temp_bytes'])} | {fs * 1e3:.1f} | "
                f"{ms(j['step_seconds'])} | "
                f"{ratio(fs, j['step_seconds'])} | "
                f"{ms(t['step_seconds'])} | "
                f"{ratio(fs, t['step_seconds'])} | {mib(t['saved_bytes'])} |")
        print(line, flush=True)
        if "error" in j:
            print(f"    JAX: {j['error']}", flush=True)
        lines.append(line)
    ferry_steps.close()
    grads = check_gradients(args.dump)
    versions = f"JAX {jax.__version__}, PyTorch {torch.__version__}, NumPy {np.__version__}, Python {platform.python_version()}"
    text = "\n".join([
        "", "## Beside JAX and PyTorch (CPU), from one run of `bench/peers/run.sh`", "",
        f"Versions: {versions}. Machine: {ferry['machine']}.", "",
        "Temp bytes: ferry's and JAX's `memory_analysis().temp_size_in_bytes` of the compiled step (gpt's step "
        "donates params, m, v and the step count in both, as `compile_gpt_train_step` does). PyTorch on "
        "the CPU has no device allocator to ask, so its column is the bytes saved for the backward pass "
        "(`saved_tensors_hooks`); `names ...` policies have no PyTorch counterpart (n/a). PyTorch's offload rows "
        "use `save_on_cpu`, which on a CPU-only machine copies to the same memory.", "",
        f"Step times: the median of {repeats} steps of each framework after a warm-up, measured in {repeats} rounds "
        "that each run one step of ferry, JAX and PyTorch (in an order rotated from round to round), so that the "
        "three medians come from the same seconds of this shared machine; ferry's steps here are run by "
        "`suite_bench --serve`, so its column is measured again beside the peers, not copied from the table above.", "",
        *lines, "",
        "Gradients against JAX on the small configurations `suite_bench --dump` writes (largest error relative to "
        "the largest JAX value): " + ", ".join(f"{k} {v:.2e}" for k, v in grads.items()) + ".", ""])
    print(text)
    with open(args.markdown, "a") as f:
        f.write(text)
    if args.ferry_jax_python:
        import subprocess
        subprocess.run([args.ferry_jax_python, os.path.join(os.path.dirname(os.path.abspath(__file__)), "ferry_jax.py"),
                        "--repeats", str(repeats), "--markdown", args.markdown],
                       check=True)


if __name__ == "__main__":
    main()
