#!/usr/bin/python3
"""Writes the TorchScript fixtures of tests/ml_torch into the folder given as
the first argument (the build tree; CTest runs this before the tests).

  mlp.pt          Linear(20, 32), ReLU, Linear(32, 10): the architecture of
                  murmur's native mlp:32 on synthetic:blobs (dim 20, 10 classes)
  cnn_gn.pt       Conv2d(1, 8, 5, padding 2), GroupNorm(4, 8), ReLU, MaxPool2d(2),
                  Conv2d(8, 16, 3, padding 1), ReLU, AvgPool2d(2), Flatten,
                  Linear(784, 32), ReLU, Linear(32, 10): the architecture of
                  murmur's native cnn:c8k5p2,gn4,pool2,c16k3p1,avg2,d32 on
                  1x28x28 images (10 classes)
  cnn_bn.pt       Conv2d(1, 4, 3, padding 1), BatchNorm2d(4), ReLU, MaxPool2d(2),
                  Flatten, Linear(36, 3), on 1x6x6 inputs
  cnn_bn.x.txt    a batch of 8 such inputs (one sample per line, 36 values)
  cnn_bn.y.txt    their labels
  cnn_bn.grad.txt PyTorch's own cross-entropy of the batch in training mode
                  (first line), then the gradient of every named parameter,
                  flattened, in named_parameters order, then the BatchNorm
                  running mean and variance after that forward pass
  bn_dropout.pt   Linear(20, 64), BatchNorm1d(64), ReLU, Dropout(0.2),
                  Linear(64, 10): trained by murmur sim on synthetic:blobs
  loss_forward.pt a module whose forward(x, y) returns its own loss
                  (cross-entropy plus 0.01 times the squared weights)
  loss_forward.grad.txt that loss on the cnn_bn batch reshaped to 36
                  features, and its gradient, as for cnn_bn.grad.txt
  not_torchscript.pt  a text file
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ml"))
from torch_cnn_reference import network  # noqa: E402  (the same network as the native CNN test's reference)

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(15)


def save(module, name):
    torch.jit.script(module).save(os.path.join(out, name))


def write_rows(name, rows):
    with open(os.path.join(out, name), "w") as f:
        for row in rows:
            f.write(" ".join(repr(float(v)) for v in row) + "\n")


save(nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 10)), "mlp.pt")

save(network(), "cnn_gn.pt")

cnn = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                    nn.Flatten(), nn.Linear(36, 3))
save(cnn, "cnn_bn.pt")
x = torch.randn(8, 1, 6, 6)
y = torch.tensor([0, 1, 2, 0, 1, 2, 2, 1])
write_rows("cnn_bn.x.txt", x.reshape(8, 36).tolist())
write_rows("cnn_bn.y.txt", [[v] for v in y.tolist()])
cnn.train()
loss = F.cross_entropy(cnn(x), y)
loss.backward()
rows = [[loss.item()]] + [p.grad.flatten().tolist() for _, p in cnn.named_parameters()]
rows += [cnn[1].running_mean.tolist(), cnn[1].running_var.tolist()]
write_rows("cnn_bn.grad.txt", rows)

save(nn.Sequential(nn.Linear(20, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 10)),
     "bn_dropout.pt")


class LossForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(36, 3)

    def forward(self, x, y):
        logits = self.fc(x)
        return F.cross_entropy(logits, y) + 0.01 * (self.fc.weight ** 2).sum()


lf = LossForward()
save(lf, "loss_forward.pt")
loss = lf(x.reshape(8, 36), y)
loss.backward()
write_rows("loss_forward.grad.txt", [[loss.item()]] + [p.grad.flatten().tolist() for _, p in lf.named_parameters()])

with open(os.path.join(out, "not_torchscript.pt"), "w") as f:
    f.write("this is not a TorchScript archive\n")
