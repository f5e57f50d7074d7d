"""Learners written in Python: murmur's algorithms drive them as their own, a NumPy softmax
regression reaches the native softmax model's accuracy, and their errors reach the caller."""

import os
import sys

import numpy as np
import pytest

import murmur

# The example learner (examples/python/softmax_learner.py) is the one tested here.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python"))
from softmax_learner import SoftmaxRegression  # noqa: E402


RING = dict(dataset="fashion-mnist", model="softmax", nodes=16, topology="ring", algorithm="dpsgd",
            compression="none", rounds=400, eval_every=400, lr=0.05)


def test_a_numpy_softmax_regression_matches_the_native_one_on_fashion_mnist():
    native = murmur.simulate(RING)
    made = []

    def make(share):
        made.append(share.node)
        return SoftmaxRegression(share)

    python = murmur.simulate(RING, learner=make)
    assert made == list(range(16))
    print(f"native {native.final.avg_acc:.4f}, NumPy learner {python.final.avg_acc:.4f}")
    assert native.final.avg_acc > 0.77  # 400 rounds of softmax regression: 0.787 (0.84 converged)
    assert abs(python.final.avg_acc - native.final.avg_acc) < 0.005
    # Same network: same bytes, since the models exchanged have the same size.
    assert python.final.bytes_sent == native.final.bytes_sent


SMALL = dict(dataset="synthetic:blobs", model="softmax", nodes=6, rounds=30, eval_every=10, compression="topk:0.5")


def test_a_python_learner_run_is_deterministic_and_works_with_every_algorithm():
    for algorithm in ("dpsgd", "dpsgd-cta", "diloco", "diloco-allreduce", "push-sum", "dsgt", "gossip-learning",
                      "fedavg", "scaffold"):
        spec = dict(SMALL, algorithm=algorithm)  # dpsgd with topk: CHOCO-SGD
        if algorithm != "dpsgd":
            spec["compression"] = "none"
        if algorithm in ("fedavg", "scaffold"):
            spec["clients_per_round"] = 3
        a = murmur.simulate(spec, learner=SoftmaxRegression)
        b = murmur.simulate(spec, learner=SoftmaxRegression, threads=2)
        assert np.array_equal(a.metrics["avg_acc"], b.metrics["avg_acc"]), algorithm
        assert a.final.avg_acc > 0.5, algorithm  # blobs: chance is 0.1


def test_params_are_views_of_the_nodes_vectors():
    seen = {}

    class Probe(SoftmaxRegression):
        def train(self, params, steps):
            seen["writable"] = params.flags.writeable
            seen["owns"] = params.flags.owndata
            seen["dtype"] = params.dtype
            return super().train(params, steps)

        def gradient(self, params, grad):
            seen["params_writable"] = params.flags.writeable
            return super().gradient(params, grad)

    murmur.simulate(SMALL, algorithm="dpsgd", learner=Probe)  # trains
    murmur.simulate(SMALL, algorithm="dsgt", compression="none", learner=Probe)  # takes gradients
    assert seen == {"writable": True, "owns": False, "dtype": np.float32, "params_writable": False}


def test_initial_and_evaluate_replace_the_spec_models():
    dim, classes = 20, 10  # synthetic:blobs
    start = np.zeros(dim * classes + classes, dtype=np.float32)
    calls = []

    def evaluate(params, features, labels, samples):
        calls.append(len(samples))
        w = params[: dim * classes].reshape(dim, classes)
        pred = (features[samples] @ w + params[dim * classes:]).argmax(axis=1)
        return float((pred == labels[samples]).mean()), 0.0

    r = murmur.simulate(SMALL, algorithm="dpsgd", learner=SoftmaxRegression, initial=start, evaluate=evaluate)
    native = murmur.simulate(SMALL, algorithm="dpsgd", learner=SoftmaxRegression, initial=start)
    # The same models, measured by the spec's model or by evaluate(): the same accuracy.
    assert np.allclose(r.metrics["avg_acc"], native.metrics["avg_acc"], atol=1e-12)
    assert r.metrics["avg_acc"][0] == pytest.approx(0.1, abs=0.02)  # all-zero model: one class
    assert calls and r.metrics["avg_loss"][-1] == 0.0


def test_learner_errors_reach_the_caller():
    class Broken(SoftmaxRegression):
        def train(self, params, steps):
            raise ValueError("diverged")

    with pytest.raises(ValueError, match="diverged"):
        murmur.simulate(SMALL, learner=Broken)

    class NoNumber(SoftmaxRegression):
        def train(self, params, steps):
            return "low"

    with pytest.raises(TypeError, match="learner.train must return the loss as a number, got str"):
        murmur.simulate(SMALL, learner=NoNumber)

    with pytest.raises(TypeError, match="has no gradient method"):
        murmur.simulate(SMALL, learner=lambda share: type("Half", (), {"train": lambda s, p, n: 0.0})())

    with pytest.raises(RuntimeError, match="factory"):
        murmur.simulate(SMALL, learner=lambda share: (_ for _ in ()).throw(RuntimeError("factory")))

    with pytest.raises(TypeError, match="learner must be callable"):
        murmur.simulate(SMALL, learner=3)

    with pytest.raises(TypeError, match="initial must have dtype float32"):
        murmur.simulate(SMALL, learner=SoftmaxRegression, initial=np.zeros(210))

    with pytest.raises(murmur.ScenarioError, match="has 7 parameters"):
        murmur.simulate(SMALL, learner=SoftmaxRegression, initial=np.zeros(7, dtype=np.float32))

    with pytest.raises(TypeError, match="go with learner="):
        murmur.simulate(SMALL, initial=np.zeros(7, dtype=np.float32))


@pytest.mark.parametrize("flops", [-1e12, -5.0, float("nan"), float("inf"), 1e20])
def test_a_learners_flops_per_step_is_refused_unless_finite_and_in_range(flops):
    # These hung the run (inf, 1e20: the virtual clock overflowed), aborted the
    # interpreter on a CHECK (nan) or ran time backwards (negative).
    class Costly(SoftmaxRegression):
        pass

    Costly.flops_per_step = flops
    with pytest.raises(ValueError, match=r"learner.flops_per_step of node 0 must be a finite number of FLOPs "
                                         r"in \[0, 1e15\], got"):
        murmur.simulate(SMALL, learner=Costly)


def test_a_learners_flops_per_step_in_range_is_taken():
    class Costly(SoftmaxRegression):
        flops_per_step = 1e9

    class Free(SoftmaxRegression):
        flops_per_step = 0.0

    slow = murmur.simulate(SMALL, learner=Costly)
    free = murmur.simulate(SMALL, learner=Free)
    assert slow.final.virtual_s > free.final.virtual_s


@pytest.mark.parametrize("dataset", ["synthetic:blobs", "fashion-mnist"])
def test_a_learner_keeps_its_share_after_simulate_returns(dataset):
    # share.features of a float dataset was a view of the run's memory: reading
    # it after simulate() returned read freed memory (a segfault).
    kept = []

    class Keeper(SoftmaxRegression):
        def __init__(self, share):
            super().__init__(share)
            kept.append(share)

    murmur.simulate(SMALL, dataset=dataset, model="softmax", learner=Keeper, rounds=2, eval_every=2)
    import gc
    gc.collect()
    assert len(kept) == SMALL["nodes"]
    first = kept[0]
    assert first.features.shape[0] == first.labels.shape[0] > 0
    assert np.isfinite(first.features.sum())
    assert set(np.unique(first.labels)) <= set(range(first.num_classes))
    assert first.samples.max() < first.features.shape[0]
    # Every node's share reads one copy of the features.
    assert all(k.features is first.features or np.shares_memory(k.features, first.features) for k in kept)


def test_evaluate_must_return_an_accuracy_in_0_1():
    def evaluate(params, features, labels, samples):
        return 1.5, 0.0

    with pytest.raises(ValueError, match=r"evaluate must return an accuracy in \[0, 1\], got 1.5"):
        murmur.simulate(SMALL, algorithm="dpsgd", learner=SoftmaxRegression, evaluate=evaluate)
