"""Every numeric argument a user can pass, fed the values that break programs: NaN, +-inf, 0,
negative, huge, and wrong types. Each call either runs (the value is valid) or raises a Python
exception naming the argument; none may crash the interpreter, hang, or reach a C++ check. Each
call has 30 s: simulate's runs here are tiny, and a run the alarm stops fails its case."""

import math
import signal

import numpy as np
import pytest

import murmur

NUMERIC = [f for f in murmur.scenario_fields() if f.type in ("int", "float")]
HOSTILE = [float("nan"), float("inf"), float("-inf"), 0, -1, 1e300, 2 ** 70, "x", [1], None]
BASES = {
    "gossip": dict(dataset="synthetic:blobs", model="softmax", nodes=4, rounds=2, eval_every=2,
                   compression="none", threads=1),
    "fedavg": dict(dataset="synthetic:blobs", model="softmax", nodes=6, rounds=2, eval_every=2,
                   algorithm="fedavg", clients_per_round=3, threads=1),
}


class Alarm:
    def __init__(self, seconds):
        self.seconds = seconds

    def __enter__(self):
        def expired(signum, frame):
            raise TimeoutError(f"no answer within {self.seconds} s")
        self.previous = signal.signal(signal.SIGALRM, expired)
        signal.alarm(self.seconds)

    def __exit__(self, *exc):
        signal.alarm(0)
        signal.signal(signal.SIGALRM, self.previous)


def _names_it(error, *names):
    text = str(error)
    return any(n in text or n.replace("_", "-") in text for n in names)


@pytest.mark.parametrize("base", sorted(BASES))
@pytest.mark.parametrize("field", NUMERIC, ids=[f.name for f in NUMERIC])
def test_simulate_takes_or_names_every_hostile_value(base, field):
    for value in HOSTILE:
        if field.repeated and isinstance(value, list):
            continue
        with Alarm(30):
            try:
                murmur.simulate(BASES[base], **{field.name: value})
            except (TypeError, ValueError) as e:  # ScenarioError is a ValueError
                assert _names_it(e, field.name, field.path.split(".")[-1]), f"{field.name}={value!r}: {e}"


LEARNER_ATTRIBUTES = ["flops_per_step"]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf"), -1.0, 1e300, "x", None],
                         ids=lambda v: repr(v))
def test_a_learners_numeric_attributes_are_taken_or_named(value):
    import os, sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python"))
    from softmax_learner import SoftmaxRegression

    for attribute in LEARNER_ATTRIBUTES:
        learner = type("Hostile", (SoftmaxRegression,), {attribute: value})
        with Alarm(30):
            with pytest.raises((TypeError, ValueError), match=attribute):
                murmur.simulate(BASES["gossip"], learner=learner)


@pytest.mark.parametrize("argument", ["seed", "node"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1, 2 ** 70, 1.5, "x", None, True])
def test_compress_names_every_hostile_value(argument, value):
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    with pytest.raises((TypeError, ValueError), match=argument):
        murmur.compress("randk:5", x, **{argument: value})


@pytest.mark.parametrize("value", [float("nan"), -1, 0, 2 ** 70, 1.5, "x", None])
def test_decompress_names_every_hostile_max_elements(value):
    wire, _ = murmur.compress("none", np.ones(8, dtype=np.float32))
    with pytest.raises((TypeError, ValueError), match="max_elements"):
        murmur.decompress(wire, max_elements=value)


@pytest.mark.parametrize("argument", ["nodes", "seed", "degree", "prob", "beta", "radius", "rounds"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf"), 0, -1, 1e300, 2 ** 70, "x", None])
def test_topology_takes_or_names_every_hostile_value(argument, value):
    kind = {"degree": "regular", "prob": "erdos-renyi", "beta": "small-world", "radius": "geometric",
            "rounds": "one-peer-exponential"}.get(argument, "ring")
    with Alarm(30):
        try:
            murmur.topology(kind, **({"nodes": 16} if argument != "nodes" else {}), **{argument: value})
        except (TypeError, ValueError) as e:  # TopologyError is a ValueError
            assert argument in str(e) or (argument == "nodes" and "node" in str(e)), f"{argument}={value!r}: {e}"
