#!/usr/bin/python3
"""Defines a small CNN for Fashion-MNIST (1x28x28 images, 10 classes) and
saves it as TorchScript for murmur (docs/torchscript.md):

    python3 examples/torchscript/make_cnn.py cnn.pt
    murmur sim --dataset fashion-mnist --model torchscript:cnn.pt --nodes 8 \\
        --rounds 100 --eval-every 25 --compression none

The module's initial weights (PyTorch's default initialization, seeded here)
are the run's initial model: murmur keeps them. BatchNorm's running
statistics are averaged with the parameters; dropout masks are drawn per
training step (see docs/torchscript.md, "Determinism").
"""
import sys

import torch
import torch.nn as nn


class SmallCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),      # 8 x 14 x 14
            nn.Conv2d(8, 16, 5, padding=2), nn.BatchNorm2d(16), nn.ReLU(),
            nn.MaxPool2d(2))                                                # 16 x 7 x 7
        self.classifier = nn.Sequential(nn.Flatten(), nn.Dropout(0.25), nn.Linear(16 * 7 * 7, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


if __name__ == "__main__":
    torch.manual_seed(0)
    path = sys.argv[1] if len(sys.argv) > 1 else "cnn.pt"
    torch.jit.script(SmallCnn()).save(path)
    print(f"saved {path}: {sum(p.numel() for p in SmallCnn().parameters())} parameters")
