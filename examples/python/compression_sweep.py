"""Accuracy against bytes sent for a sweep of compressors (CHOCO-SGD on a ring), plotted with matplotlib.

Notebook-ready: each cell of a notebook can be a block below. Every run is `murmur sim`'s
for the same scenario and seed (examples/compression_sweep.textproto holds the shared
settings); the metrics come back as NumPy arrays.

Run: PYTHONPATH=build/release/python python3 examples/python/compression_sweep.py [OUT.png] [ROUNDS]
"""

import os
import sys

import matplotlib

matplotlib.use("Agg")  # no display needed; drop this line in a notebook
import matplotlib.pyplot as plt

import murmur

out = sys.argv[1] if len(sys.argv) > 1 else "compression_sweep.png"
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 200
scenario = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "compression_sweep.textproto")
compressors = ["none", "fp16", "int8", "qsgd:16", "topk:0.1", "topk:0.01", "sign"]

results = {}
for spec in compressors:
    r = murmur.simulate(scenario, compression=spec, rounds=rounds,
                        eval_every=max(1, rounds // 10))
    results[spec] = r
    print(f"{spec:10s} accuracy {r.final.avg_acc:.4f}  {r.final.bytes_sent / 1e6:9.1f} MB sent")

fig, (by_round, by_bytes) = plt.subplots(1, 2, figsize=(11, 4))
for spec, r in results.items():
    m = r.metrics
    by_round.plot(m["round"], m["avg_acc"], label=spec)
    by_bytes.plot(m["bytes_sent"] / 1e6, m["avg_acc"], label=spec)
by_round.set(xlabel="round", ylabel="averaged-model test accuracy")
by_bytes.set(xlabel="MB sent (all nodes)", ylabel="averaged-model test accuracy", xscale="log")
by_bytes.legend(loc="lower right")
fig.tight_layout()
fig.savefig(out, dpi=100)
print(f"plot: {out}")
