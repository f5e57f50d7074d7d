"""A learner written in Python: softmax regression in NumPy, trained by murmur's simulator.

murmur calls `SoftmaxRegression(share)` once per node and then drives it like its own
learner: D-PSGD (or any algorithm) calls train(params, steps), gradient tracking calls
gradient(params, grad). `params` is a NumPy view of the node's model (float32, no copy).

Run: PYTHONPATH=build/release/python python3 examples/python/softmax_learner.py
"""

import numpy as np


class SoftmaxRegression:
    """Multinomial logistic regression with minibatch SGD, in NumPy, in murmur's softmax
    layout (ml/mlp.cc: weight 784 x 10 row-major, then bias 10), so the spec's model can
    measure it. Batches are drawn by the learner's own generator, not murmur's."""

    def __init__(self, share):
        self.x, self.y = share.features, share.labels
        self.samples = share.samples
        self.batch, self.lr, self.classes = share.batch, share.lr, share.num_classes
        self.dim = self.x.shape[1]
        self.rng = np.random.default_rng([share.seed, share.node])
        self.steps_taken = 0

    def _split(self, params):
        w = params[: self.dim * self.classes].reshape(self.dim, self.classes)
        return w, params[self.dim * self.classes:]

    def _loss_and_grad(self, params, grad):
        idx = self.rng.choice(self.samples, size=min(self.batch, len(self.samples)), replace=False)
        x, y = self.x[idx], self.y[idx]
        w, b = self._split(params)
        z = x @ w + b
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        loss = -np.log(p[np.arange(len(y)), y]).mean()
        p[np.arange(len(y)), y] -= 1
        p /= len(y)
        gw, gb = self._split(grad)
        gw[...] = x.T @ p
        gb[...] = p.sum(axis=0)
        return float(loss)

    def train(self, params, steps):
        grad = np.empty_like(params)
        total = 0.0
        for _ in range(steps):
            total += self._loss_and_grad(params, grad)
            params -= np.float32(self.lr) * grad
            self.steps_taken += 1
        return total / steps

    def gradient(self, params, grad):
        return self._loss_and_grad(params, grad)


if __name__ == "__main__":
    import murmur

    ring = dict(dataset="fashion-mnist", model="softmax", nodes=16, topology="ring", algorithm="dpsgd",
                compression="none", rounds=400, eval_every=100, lr=0.05)
    native = murmur.simulate(ring)
    python = murmur.simulate(ring, learner=SoftmaxRegression)
    for name, r in (("murmur's softmax", native), ("NumPy learner", python)):
        print(f"{name:18s} averaged-model accuracy {r.final.avg_acc:.4f}  ({r.final.wall_s:.2f} s)")
