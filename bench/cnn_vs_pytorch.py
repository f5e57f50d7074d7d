#!/usr/bin/python3
"""murmur's native CNN against PyTorch (Debian's python3-torch, LibTorch 1.13 with oneDNN)
on the same architecture, batch, optimizer and thread count, measured alternately in one run.

murmur: `murmur bench train --model SPEC --batch B --threads 1` (Adam, random 1x28x28 data;
its samples/s line for one thread, which it prints next to the core's FMA peak and its GEMM floor). PyTorch: the same
network as nn.Sequential, Adam, one intra-op thread, random data of the same shape, forward,
backward and step in a loop. Python's per-step overhead (a few microseconds per call) is far
below one step of these networks (milliseconds).

usage: python3 bench/cnn_vs_pytorch.py [--cli build/release/bin/murmur] [--model cnn-fedavg]
                                       [--batch 32] [--seconds 5] [--reps 3]
"""
import argparse
import re
import statistics
import subprocess
import time

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--cli", default="build/release/bin/murmur")
p.add_argument("--model", default="cnn-fedavg", choices=["cnn-fedavg", "lenet5"])
p.add_argument("--batch", type=int, default=32)
p.add_argument("--seconds", type=float, default=5)
p.add_argument("--reps", type=int, default=3)
a = p.parse_args()

torch.set_num_threads(1)
if a.model == "cnn-fedavg":  # cnn:c32k5p2,pool2,c64k5p2,pool2,d512
    net = nn.Sequential(nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                        nn.Linear(3136, 512), nn.ReLU(), nn.Linear(512, 10))
else:  # cnn:c6k5p2,pool2,c16k5,pool2,d120,d84
    net = nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                        nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))
opt = torch.optim.Adam(net.parameters(), 1e-3)
x = torch.rand(a.batch, 1, 28, 28)
y = torch.randint(0, 10, (a.batch,))


def torch_rate():
    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
    for _ in range(3):
        step()
    start, n = time.monotonic(), 0
    while time.monotonic() - start < a.seconds:
        step()
        n += a.batch
    return n / (time.monotonic() - start)


def murmur_rate():
    out = subprocess.run([a.cli, "bench", "train", "--model", a.model, "--batch", str(a.batch), "--threads", "1",
                          "--seconds", str(a.seconds)], check=True, capture_output=True, text=True).stdout
    # Its medians over the repeats of the floors and training measured in turn.
    m = re.search(r"training batch \d+, 1 thread: (\d+) samples/s = [0-9.]+ GFLOP/s; "
                  r"of the FMA peak x 1: ([0-9.]+) .*?; of the GEMM floor x 1: ([0-9.]+) ", out)
    return float(m.group(1)), float(m.group(2)), float(m.group(3))


ours, theirs, peaks, floors = [], [], [], []
for rep in range(a.reps):
    rate, of_peak, of_floor = murmur_rate()
    ours.append(rate)
    peaks.append(of_peak)
    floors.append(of_floor)
    theirs.append(torch_rate())
    print(f"rep {rep}: murmur {ours[-1]:.0f} samples/s ({of_peak:.2f} of the FMA peak, {of_floor:.2f} of its "
          f"GEMM floor), PyTorch {theirs[-1]:.0f} samples/s")
print(f"{a.model}, batch {a.batch}, one thread: murmur median {statistics.median(ours):.0f} samples/s, "
      f"PyTorch (the peer) median {statistics.median(theirs):.0f} samples/s, ratio "
      f"{statistics.median(ours) / statistics.median(theirs):.2f} (target >= 0.8); murmur at "
      f"{statistics.median(peaks):.2f} of the core's FMA peak (target >= 0.85) and "
      f"{statistics.median(floors):.2f} of its GEMM floor")
