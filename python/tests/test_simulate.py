"""murmur.simulate against `murmur sim`: the same scenario and seed give the same metrics, bit for bit."""

import csv
import os
import signal
import threading
import time

import numpy as np
import pandas as pd
import pytest

import murmur

# The CSV's number formats (sim/run/metrics.cc): the text the CLI writes for a value.
_FORMATS = {"round": "{:d}", "virtual_s": "%.6f", "wall_s": None, "acc_mean": "%.6f", "acc_min": "%.6f",
            "acc_max": "%.6f", "loss_mean": "%.6f", "avg_acc": "%.6f", "avg_loss": "%.6f",
            "train_loss": "%.6f", "consensus": "%.6g", "bytes_sent": "{:d}", "bytes_received": "{:d}",
            "messages_lost": "{:d}", "online": "{:d}", "epsilon": "%.6g", "stop": "{}"}

SMALL = dict(dataset="synthetic:blobs", model="mlp:16", nodes=8, rounds=40, eval_every=10, compression="topk:0.1")


def _as_csv_text(column, value):
    fmt = _FORMATS[column]
    if fmt.startswith("%"):
        return fmt % value
    return fmt.format(value)


def _read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _assert_metrics_equal_csv(metrics, rows):
    assert len(metrics) == len(rows), "evaluation points differ"
    assert list(rows[0].keys()) == list(murmur.Metrics.columns)
    for i, row in enumerate(rows):
        for column in murmur.Metrics.columns:
            if column == "wall_s":  # real time: differs between any two runs
                continue
            got = _as_csv_text(column, metrics[column][i])
            assert got == row[column], f"point {i} column {column}: python {got}, cli {row[column]}"


def test_default_scenario_metrics_equal_the_clis(cli, tmp_path):
    # The default scenario (64 nodes, MLP, Fashion-MNIST, top-1% CHOCO), cut
    # to 12 rounds so the fast suite stays short; the slow suite runs it whole.
    csv_path = tmp_path / "cli.csv"
    out = cli("sim", "--rounds", 12, "--eval-every", 4, "--quiet", "--metrics-csv", csv_path).stdout
    r = murmur.simulate(rounds=12, eval_every=4)
    rows = _read_csv(csv_path)
    _assert_metrics_equal_csv(r.metrics, rows)
    assert len(rows) == 4 and rows[-1]["stop"] == "rounds done"
    # The summary line `murmur sim` prints, from the Python result.
    f = r.final
    line = (f"final (round {f.round}): averaged-model test accuracy {f.avg_acc:.4f}, node accuracy mean "
            f"{f.acc_mean:.4f} (min {f.acc_min:.4f}, max {f.acc_max:.4f}) over {f.evaluated_nodes} of "
            f"{f.learning_nodes} nodes")
    assert line in out
    assert f"stopped: {f.stop_reason}" in out
    assert f"traffic: {f.bytes_sent / 1e6:.1f} MB sent" in out
    assert r.final.description in out


def test_a_federated_scenario_equals_the_clis(cli, tmp_path):
    csv_path = tmp_path / "cli.csv"
    args = ["--algorithm", "fedavg", "--dataset", "synthetic:blobs", "--model", "mlp:16", "--nodes", 10,
            "--rounds", 6, "--eval-every", 2, "--clients-per-round", 4, "--compression", "none"]
    out = cli("sim", *args, "--quiet", "--metrics-csv", csv_path).stdout
    r = murmur.simulate(algorithm="fedavg", dataset="synthetic:blobs", model="mlp:16", nodes=10, rounds=6,
                        eval_every=2, clients_per_round=4, compression="none")
    _assert_metrics_equal_csv(r.metrics, _read_csv(csv_path))
    assert r.final.federated
    assert f"global model test accuracy {r.final.avg_acc:.4f}" in out
    assert f"{r.final.contributors} of {r.final.clients} clients contributed" in out


def test_a_scenario_file_its_text_and_a_dict_run_the_same(cli, tmp_path):
    path = os.path.join("examples", "pushsum_loss.textproto")
    overrides = dict(dataset="synthetic:blobs", model="mlp:16", nodes=12, rounds=20, eval_every=10)
    csv_path = tmp_path / "cli.csv"
    cli("sim", "--scenario", path, *[f"--{k.replace('_', '-')}={v}" for k, v in overrides.items()], "--quiet",
        "--metrics-csv", csv_path)
    from_path = murmur.simulate(path, **overrides)
    _assert_metrics_equal_csv(from_path.metrics, _read_csv(csv_path))
    with open(path) as f:
        text = f.read()
    from_text = murmur.simulate(text, **overrides)
    loaded = murmur.load_scenario(path, **overrides)
    # The file as a dict (its spec block nested, `loss` flat), with the same overrides.
    as_dict = {"spec": {"algorithm": "push-sum", "topology": "exponential", "compression": "none",
                        "round_timeout": 0.5, "seed": 1, "dataset": "synthetic:blobs", "model": "mlp:16",
                        "nodes": 12, "rounds": 20, "eval_every": 10},
               "loss": 0.1}
    from_dict = murmur.simulate(as_dict)
    for other in (from_text, from_dict):
        for column in murmur.Metrics.columns:
            if column != "wall_s":
                assert np.array_equal(np.asarray(other.metrics[column]), np.asarray(from_path.metrics[column])), column
    assert "push-sum" in loaded.text()


def test_python_writes_the_same_metrics_csv(cli, tmp_path):
    a, b = tmp_path / "cli.csv", tmp_path / "py.csv"
    cli("sim", *[f"--{k.replace('_', '-')}={v}" for k, v in SMALL.items()], "--quiet", "--metrics-csv", a)
    murmur.simulate(SMALL, metrics_csv=str(b))
    ra, rb = _read_csv(a), _read_csv(b)
    for x, y in zip(ra, rb):
        x.pop("wall_s"), y.pop("wall_s")
    assert ra == rb and len(ra) == 5


def test_metrics_forms_agree():
    r = murmur.simulate(**SMALL)
    m = r.metrics
    assert m["round"].dtype == np.uint64 and m["avg_acc"].dtype == np.float64
    assert list(m["round"]) == [0, 10, 20, 30, 40]
    rows = m.rows
    assert [row["round"] for row in rows] == [0, 10, 20, 30, 40]
    assert rows[-1]["stop"] == "rounds done" and all(row["stop"] == "" for row in rows[:-1])
    df = m.to_pandas()
    assert isinstance(df, pd.DataFrame) and list(df.columns) == list(murmur.Metrics.columns)
    assert np.array_equal(df["avg_acc"].to_numpy(), m["avg_acc"])
    assert r.final.avg_acc == rows[-1]["avg_acc"] and r.final.round == 40
    assert r.final.avg_acc > 0.7  # blobs are separable: an MLP learns them in 40 rounds
    with pytest.raises(KeyError, match="no metrics column 'accuracy'"):
        m["accuracy"]


def test_same_seed_same_result_any_thread_count():
    a = murmur.simulate(SMALL, threads=1)
    b = murmur.simulate(SMALL, threads=2)
    c = murmur.simulate(SMALL, seed=2)
    assert np.array_equal(a.metrics["avg_acc"], b.metrics["avg_acc"])
    assert np.array_equal(a.metrics["consensus"], b.metrics["consensus"])
    assert not np.array_equal(a.metrics["consensus"], c.metrics["consensus"])


def test_progress_reports_rounds_and_each_evaluation():
    calls = []
    r = murmur.simulate(SMALL, progress=lambda done, total, point: calls.append((done, total, point)))
    assert all(total == 40 for _, total, _ in calls)
    dones = [d for d, _, _ in calls]
    assert dones == sorted(dones) and dones[-1] == 40
    points = [p for _, _, p in calls if p is not None]
    assert [p["round"] for p in points] == [0, 10, 20, 30, 40]
    assert [p["avg_acc"] for p in points] == list(r.metrics["avg_acc"])


def test_an_exception_in_progress_stops_the_run_and_propagates():
    seen = []

    def stop_at_5(done, total, point):
        seen.append(done)
        if done >= 5:
            raise RuntimeError("enough")

    with pytest.raises(RuntimeError, match="enough"):
        murmur.simulate(SMALL, progress=stop_at_5)
    assert max(seen) == 5  # no call after the one that raised


def test_ctrl_c_stops_between_events_and_keeps_the_result():
    # SIGINT comes once the run is under way (at its 10th round), as a user's Ctrl-C would.
    def ctrl_c_at_10(done, total, point):
        if done == 10 and point is None:
            os.kill(os.getpid(), signal.SIGINT)

    start = time.monotonic()
    with pytest.raises(murmur.Interrupted) as caught:
        murmur.simulate(SMALL, rounds=1_000_000, eval_every=100_000, progress=ctrl_c_at_10)
    assert time.monotonic() - start < 30
    r = caught.value.result
    assert isinstance(caught.value, KeyboardInterrupt)
    assert r.final.stop_reason == "interrupted" and 10 <= r.final.rounds_done <= 11
    assert r.metrics["stop"][-1] == "interrupted"
    # A SIGINT from another thread, at no particular point of a running run, stops it too.
    timers = []

    def ctrl_c_soon(done, total, point):
        if not timers:
            timers.append(threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)))
            timers[0].start()

    with pytest.raises(murmur.Interrupted) as caught:
        murmur.simulate(SMALL, rounds=1_000_000, eval_every=100_000, progress=ctrl_c_soon)
    timers[0].join()
    assert 0 < caught.value.result.final.rounds_done < 1_000_000
    # Python's own handler is back: the next Ctrl-C is a KeyboardInterrupt.
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)


def test_the_gil_is_released_during_a_run():
    ticks = [0]
    running = threading.Event()
    done = threading.Event()

    def count():
        running.set()
        while not done.is_set():
            ticks[0] += 1

    t = threading.Thread(target=count)
    t.start()
    running.wait()
    # The run must last long enough for the counter to be measured on any
    # machine: double its rounds until it takes at least 0.1 s of wall time.
    rounds = 400
    while True:
        before = ticks[0]
        r = murmur.simulate(SMALL, rounds=rounds, eval_every=rounds)
        during = ticks[0] - before
        if r.final.wall_s >= 0.1 or rounds >= 400 * 64:
            break
        rounds *= 2
    done.set()
    t.join()
    assert r.final.wall_s >= 0.1, (rounds, r.final.wall_s)
    # With the GIL held for the whole run the counter would stand still (it
    # could run only at the few switch points around the call).
    assert during > 10_000, during


def test_runs_in_two_threads_at_once_give_their_own_results():
    out = {}

    def run(seed):
        out[seed] = murmur.simulate(SMALL, seed=seed).metrics["consensus"]

    threads = [threading.Thread(target=run, args=(s,)) for s in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert np.array_equal(out[1], murmur.simulate(SMALL, seed=1).metrics["consensus"])
    assert np.array_equal(out[2], murmur.simulate(SMALL, seed=2).metrics["consensus"])


def test_refused_updates_are_counted_by_reason():
    # Sign-flip attackers scaled by 100 send models 100 times an honest one's
    # size: the plausibility bound (10 ||x_i||) refuses every one of them.
    attacked = dict(dataset="synthetic:blobs", model="softmax", nodes=12, rounds=20, eval_every=20,
                    compression="none", attack="sign-flip", attack_scale=100, attack_fraction=0.25,
                    topology="ring")
    r = murmur.simulate(attacked)
    assert set(r.final.refused) == {"wrong_length", "wrong_encoding", "not_finite", "implausible",
                                    "not_aggregator", "bad_shares"}
    assert r.final.refused["implausible"] > 0
    assert sum(r.final.refused.values()) == r.final.refused["implausible"]
    unbounded = murmur.simulate(attacked, plausibility=0)
    assert sum(unbounded.final.refused.values()) == 0
    assert unbounded.final.avg_acc < r.final.avg_acc
