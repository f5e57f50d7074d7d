"""A PyTorch CNN trained by murmur's simulator: 16 nodes on a ring, D-PSGD with top-10%
CHOCO compression, Fashion-MNIST split across the nodes.

murmur runs the decentralized algorithm (who talks to whom, compression with error
feedback, devices, churn, virtual time); each node's local step is PyTorch's. A node's
model travels as one float32 vector; the learner copies it into the network's
parameters, takes its SGD steps, and copies the result back.

Run: PYTHONPATH=build/release/python python3 examples/python/torch_cnn_ring.py [ROUNDS]
"""

import sys

import numpy as np
import torch
from torch import nn
from torch.nn.utils import parameters_to_vector, vector_to_parameters

import murmur

torch.set_num_threads(1)  # murmur calls learners one at a time; one thread avoids oversubscription


def make_cnn():
    torch.manual_seed(0)  # every node starts from the same network
    return nn.Sequential(
        nn.Unflatten(1, (1, 28, 28)),
        nn.Conv2d(1, 8, 5), nn.ReLU(), nn.MaxPool2d(2),   # 8 x 12 x 12
        nn.Conv2d(8, 16, 5), nn.ReLU(), nn.MaxPool2d(2),  # 16 x 4 x 4
        nn.Flatten(), nn.Linear(256, 10))


class TorchLearner:
    def __init__(self, share):
        self.net = make_cnn()
        self.x = torch.from_numpy(np.ascontiguousarray(share.features))  # shared with murmur's dataset
        self.y = torch.from_numpy(share.labels.astype(np.int64))
        self.samples = torch.from_numpy(share.samples.astype(np.int64))
        self.batch = share.batch
        self.opt = torch.optim.SGD(self.net.parameters(), lr=share.lr)
        self.gen = torch.Generator().manual_seed(share.seed * 1000 + share.node)

    def _batch(self):
        pick = torch.randint(len(self.samples), (self.batch,), generator=self.gen)
        i = self.samples[pick]
        return self.x[i], self.y[i]

    def train(self, params, steps):
        vector_to_parameters(torch.from_numpy(params), self.net.parameters())
        total = 0.0
        for _ in range(steps):
            x, y = self._batch()
            self.opt.zero_grad()
            loss = nn.functional.cross_entropy(self.net(x), y)
            loss.backward()
            self.opt.step()
            total += loss.item()
        params[:] = parameters_to_vector(self.net.parameters()).detach().numpy()
        return total / steps

    def gradient(self, params, grad):
        vector_to_parameters(torch.from_numpy(params.copy()), self.net.parameters())
        x, y = self._batch()
        self.net.zero_grad()
        loss = nn.functional.cross_entropy(self.net(x), y)
        loss.backward()
        grad[:] = torch.cat([p.grad.reshape(-1) for p in self.net.parameters()]).numpy()
        return loss.item()


evaluator = make_cnn()


@torch.no_grad()
def evaluate(params, features, labels, samples):
    vector_to_parameters(torch.from_numpy(params.copy()), evaluator.parameters())
    x = torch.from_numpy(features[samples])
    y = torch.from_numpy(labels[samples].astype(np.int64))
    logits = evaluator(x)
    return (logits.argmax(1) == y).float().mean().item(), nn.functional.cross_entropy(logits, y).item()


if __name__ == "__main__":
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    initial = parameters_to_vector(make_cnn().parameters()).detach().numpy().astype(np.float32)
    r = murmur.simulate(dataset="fashion-mnist", nodes=16, topology="ring", algorithm="dpsgd",
                        compression="topk:0.1", rounds=rounds, eval_every=max(1, rounds // 5), eval_nodes=4,
                        eval_samples=1000, lr=0.05, learner=TorchLearner, initial=initial, evaluate=evaluate,
                        progress=True)
    for row in r.metrics.rows:
        print(f"round {row['round']:4d}  averaged-model accuracy {row['avg_acc']:.4f}  "
              f"node mean {row['acc_mean']:.4f}  {row['bytes_sent'] / 1e6:.1f} MB sent")
    print(f"{initial.size} parameters per node; {r.final.wall_s:.1f} s")
