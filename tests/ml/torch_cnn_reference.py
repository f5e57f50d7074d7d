#!/usr/bin/python3
"""PyTorch's side of tests/ml/cnn_test.cc "The CNN follows PyTorch step for step".

Trains, with PyTorch (Debian's python3-torch), the network of the murmur spec
cnn:c8k5p2,gn4,pool2,c16k3p1,avg2,d32 on random 8-bit images for 100 plain SGD
steps and writes to OUT_DIR: x.npy (uint8, N x 1 x 28 x 28), y.npy (int64),
params0.npy (the initial weights in murmur's Layout order and layout: a
convolution's weight as PyTorch keeps it, a dense weight transposed to
{in, out}), losses.npy (float64, the loss of each step before its update) and
params100.npy (the weights after the last step).

usage: torch_cnn_reference.py OUT_DIR
"""
import os
import sys

import numpy as np
import torch
from torch import nn

STEPS, BATCH, LR = 100, 16, 0.05


def network():
    """The PyTorch network of murmur's cnn:c8k5p2,gn4,pool2,c16k3p1,avg2,d32
    on 1x28x28 images, 10 classes, initialized from torch's generator (also
    tests/ml_torch/make_fixtures.py's cnn_gn.pt)."""
    net = nn.Sequential(nn.Conv2d(1, 8, 5, padding=2), nn.GroupNorm(4, 8), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(),
                        nn.Linear(16 * 7 * 7, 32), nn.ReLU(), nn.Linear(32, 10))
    with torch.no_grad():  # nonzero norm scales and shifts, so that they matter
        net[1].weight.uniform_(0.5, 1.5)
        net[1].bias.uniform_(-0.1, 0.1)
    return net


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    n = STEPS * BATCH
    x = rng.integers(0, 256, (n, 1, 28, 28), dtype=np.uint8)
    y = rng.integers(0, 10, n).astype(np.int64)

    net = network()

    def flat():
        parts = []
        for m in net:
            if isinstance(m, nn.Linear):
                parts += [m.weight.detach().t().reshape(-1), m.bias.detach()]
            elif isinstance(m, (nn.Conv2d, nn.GroupNorm)):
                parts += [m.weight.detach().reshape(-1), m.bias.detach()]
        return torch.cat(parts).numpy().astype(np.float32)

    np.save(os.path.join(out, "x.npy"), x)
    np.save(os.path.join(out, "y.npy"), y)
    np.save(os.path.join(out, "params0.npy"), flat())
    opt = torch.optim.SGD(net.parameters(), lr=LR)
    losses = []
    scale = np.float32(1.0) / np.float32(255.0)  # murmur reads a pixel as pixel * (1 / 255) in float
    for k in range(STEPS):
        xb = torch.from_numpy(x[k * BATCH:(k + 1) * BATCH].astype(np.float32) * scale)
        yb = torch.from_numpy(y[k * BATCH:(k + 1) * BATCH])
        opt.zero_grad()
        loss = nn.functional.cross_entropy(net(xb), yb)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    np.save(os.path.join(out, "losses.npy"), np.array(losses, dtype=np.float64))
    np.save(os.path.join(out, "params100.npy"), flat())


if __name__ == "__main__":
    main()
