#!/usr/bin/env python3
"""murmur.simulate against `murmur sim` on the benchmark configuration (murmur bench sim's
64-node run: ring, D-PSGD, MLP 784-128-10, batch 32, IID Fashion-MNIST, no compression).

Runs the CLI and the Python package alternately, REPS times each, and prints each run's
rounds/s as both report it (RunSummary: rounds done over the run's wall time, the number
`murmur sim` prints as "speed"), the medians and their ratio; the target is >= 0.98.

usage: PYTHONPATH=build/release/python python3 bench/python_overhead.py [--cli PATH] [--reps N] [--rounds R]
"""

import argparse
import re
import statistics
import subprocess
import time

import murmur

p = argparse.ArgumentParser()
p.add_argument("--cli", default="build/release/bin/murmur")
p.add_argument("--reps", type=int, default=5)
p.add_argument("--rounds", type=int, default=100)
p.add_argument("--nodes", type=int, default=64)
a = p.parse_args()

config = dict(nodes=a.nodes, model="mlp:128", compression="none", rounds=a.rounds, eval_every=a.rounds, batch=32)
flags = [f"--{k.replace('_', '-')}={v}" for k, v in config.items()]
cli_rates, py_rates, py_calls = [], [], []
for rep in range(a.reps):
    out = subprocess.run([a.cli, "sim", *flags, "--quiet"], capture_output=True, text=True, check=True).stdout
    cli_rates.append(float(re.search(r"speed: (\S+) rounds/s", out).group(1)))
    start = time.monotonic()
    r = murmur.simulate(config)
    py_calls.append(time.monotonic() - start)
    py_rates.append(r.final.rounds_per_s)
    print(f"rep {rep}: murmur sim {cli_rates[-1]:.3g} rounds/s, murmur.simulate {py_rates[-1]:.3g} rounds/s "
          f"(call {py_calls[-1]:.2f} s)", flush=True)
cli, py = statistics.median(cli_rates), statistics.median(py_rates)
# Each rep's two runs are back to back, so their ratio is the least disturbed by a
# machine whose load drifts; its median is the second figure.
paired = statistics.median(p_ / c for p_, c in zip(py_rates, cli_rates))
print(f"{a.nodes} nodes, {a.rounds} rounds: murmur sim median {cli:.3g} rounds/s (the peer), "
      f"murmur.simulate median {py:.3g} rounds/s, ratio {py / cli:.3f}, median of the paired ratios "
      f"{paired:.3f} (target >= 0.98)")

# A learner written in Python against murmur's own on the same model: softmax
# regression on Fashion-MNIST, 16 nodes on a ring, one local step per round.
# The extra wall time per local step is the cost of the Python learner (the
# GIL, the call, NumPy's per-call overhead) over ml::MlLearner's step.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "python"))
from softmax_learner import SoftmaxRegression  # noqa: E402

ring = dict(dataset="fashion-mnist", model="softmax", nodes=16, topology="ring", compression="none",
            rounds=a.rounds * 4, eval_every=a.rounds * 4)
steps = ring["nodes"] * ring["rounds"]
native_s, python_s = [], []
for rep in range(a.reps):
    native_s.append(murmur.simulate(ring).final.wall_s)
    python_s.append(murmur.simulate(ring, learner=SoftmaxRegression).final.wall_s)
n, p_ = statistics.median(native_s), statistics.median(python_s)
print(f"softmax, 16 nodes, {ring['rounds']} rounds ({steps} local steps): native run {n:.3f} s "
      f"({n / steps * 1e6:.1f} us per step, all of the run), NumPy learner {p_:.3f} s "
      f"({p_ / steps * 1e6:.1f} us per step); the Python learner costs {(p_ - n) / steps * 1e6:.1f} us more "
      f"per step, {p_ / n:.2f}x the native run")
