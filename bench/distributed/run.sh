#!/usr/bin/env bash
# 1 process against 2: the demo's GPT step (ferry demo --processes; the same global batch of 8 rows,
# split over the processes) under each sharding, each process one compute thread. Prints a markdown
# table: the step time measured (mean of the steps after compiling), the time a step waited for
# collectives (from the last five steps' timelines: the compute lane's "wait" slices), the bytes
# each process sent in a step's collectives (counted by the runtime as each exchange started, at a
# ring's bytes for its payload; the plan's beside it) against the ring's lower bound for an
# all-reduce of the gradients (2(N-1)/N of their bytes), and the device peak planned and measured.
# Needs build/ (FERRY_BUILD_DIR names another) and mpirun.
set -euo pipefail
cd "$(dirname "$0")/../.."
ferry="${FERRY_BUILD_DIR:-build}/ferry"
steps="${STEPS:-60}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() {  # processes sharding
  (cd "$work" && mpirun --allow-run-as-root --oversubscribe -np "$1" -x FERRY_NUM_THREADS=1 \
     "$OLDPWD/$ferry" demo --processes --sharding "$2" --steps "$steps" --min-factor 0 --json "$work/$1-$2.json" >/dev/null)
}
for s in replicated optimizer_state gradients parameters; do
  for n in 1 2; do run "$n" "$s"; done
done
python3 - "$work" <<'PY'
import json, sys, glob, os
rows = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(sys.argv[1], "[0-9]*-*.json")))]
print(f"Machine: {rows[0]['machine']}. Each process one compute thread.\n")
print("| sharding | processes | step (ms) | waited for collectives (ms) | estimated step (ms) | sent per step, counted / planned (MiB) | ring lower bound (MiB) | device peak planned / measured (MiB) | loss first -> last |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
order = {"replicated": 0, "optimizer_state": 1, "gradients": 2, "parameters": 3}
for r in sorted(rows, key=lambda r: (order[r["sharding"]], r["processes"])):
    n = r["processes"]
    bound = 2 * (n - 1) / n * r["gradient_bytes"] / 2**20
    print(f"| {r['sharding']} | {n} | {r['step_ms']:.1f} | {r['waited_ms']:.2f} | {r['estimated_step_ms']:.1f} | "
          f"{r['bytes_exchanged_counted'] / 2**20:.2f} / {r['bytes_exchanged'] / 2**20:.2f} | {bound:.2f} | {r['device_peak'] / 2**20:.2f} / {r['device_high_water'] / 2**20:.2f} | "
          f"{r['first_loss']:.4f} -> {r['last_loss']:.4f} |")
PY
