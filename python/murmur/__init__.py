"""murmur from Python: the simulator, topologies and compressors.

Thin bindings over the C++ code that the ``murmur`` CLI runs: one scenario
schema (proto/scenario.proto), one runner, so every number equals the one
``murmur sim`` prints for the same scenario and seed. docs/python.md is the
reference.

    >>> import murmur
    >>> r = murmur.simulate(nodes=16, rounds=50, dataset="synthetic:blobs", model="mlp:16")
    >>> r.final.avg_acc, r.metrics["avg_acc"][-1]
"""

import numbers
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _murmur
from ._murmur import CompressionError, CompressorState, ScenarioError, TopologyError

__version__ = _murmur.__version__

__all__ = [
    "simulate",
    "load_scenario",
    "Scenario",
    "scenario_fields",
    "SimulationResult",
    "Metrics",
    "Final",
    "Interrupted",
    "ScenarioError",
    "topology",
    "topology_kinds",
    "Topology",
    "TopologyError",
    "compress",
    "decompress",
    "CompressorState",
    "CompressionError",
]

# --------------------------------------------------------------------------
# Scenarios


@dataclass(frozen=True)
class FieldInfo:
    """One scenario field that simulate() takes by name (a `murmur sim` flag)."""

    name: str
    type: str  # "int", "float", "bool" or "str"
    repeated: bool  # a list of ints (attackers)
    default: str
    help: str
    path: str = ""  # where a scenario file nests it: "spec.nodes", "faults.drop", "threads"


_FIELDS: Dict[str, FieldInfo] = {f[0]: FieldInfo(*f) for f in _murmur.scenario_fields()}
# A nested field's flat name by its path ("spec.nodes" -> "nodes"), and each
# nesting message's prefix of flat names ("faults" -> "fault_").
_BY_PATH: Dict[str, str] = {f.path: f.name for f in _FIELDS.values()}
_PREFIXES: Dict[str, str] = {}
for _f in _FIELDS.values():
    if "." in _f.path:
        _holder, _leaf = _f.path.split(".", 1)
        _PREFIXES.setdefault(_holder, _f.name[: len(_f.name) - len(_leaf)])


def _flatten_nested(holder: str, values: dict, flat: List[Tuple[str, Any]]) -> bool:
    """Appends `values` ({"nodes": 4} of holder "spec") to `flat` under the
    flat names the keywords use, so that a nested dict is converted and
    refused as the flat form is; False (nothing appended) when the message
    has fields that are not flat names (they go through the scenario text)."""
    if holder not in _PREFIXES:
        return False
    items = []
    for key, value in values.items():
        if not isinstance(key, str):
            raise TypeError(f"scenario keys are field names (str), got {key!r}")
        if isinstance(value, dict):
            return False
        # A key that names no field keeps its name, which the C++ side refuses
        # with the nearest fields, as it does a flat one.
        items.append((_BY_PATH.get(f"{holder}.{key}", _PREFIXES[holder] + key), value))
    flat.extend(items)
    return True


def scenario_fields() -> List[FieldInfo]:
    """Every field simulate() takes as a keyword, in schema order (as `murmur sim --help` lists them)."""
    return list(_FIELDS.values())


def _value_text(name: str, value: Any) -> str:
    """`value` as the text `murmur sim --NAME TEXT` would take, checked against the field's type."""
    info = _FIELDS.get(name)
    if info is None:
        return str(value)  # the C++ side names the unknown field and suggests near ones
    def wrong(expected: str) -> TypeError:
        return TypeError(f"scenario field '{name}' wants {expected}, got {type(value).__name__} {value!r}")
    if info.repeated:
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, np.ndarray)):
            raise wrong("a list of whole numbers")
        items = []
        for item in value:
            if isinstance(item, (bool, np.bool_)) or not isinstance(item, numbers.Integral):
                raise wrong("a list of whole numbers")
            items.append(str(int(item)))
        return ",".join(items)
    if info.type == "bool":
        if not isinstance(value, (bool, np.bool_)):
            raise wrong("True or False")
        return "true" if value else "false"
    if info.type == "int":
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
            raise wrong("a whole number")
        return str(int(value))
    if info.type == "float":
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise wrong("a number")
        return repr(float(value))  # shortest text that reads back as the same double
    if not isinstance(value, str):
        if isinstance(value, os.PathLike):
            return os.fspath(value)
        raise wrong("a string")
    return value


def _looks_like_path(text: str) -> bool:
    return bool(text) and ":" not in text and "{" not in text and "\n" not in text


class Scenario:
    """A validated scenario: what simulate() runs. Build one with load_scenario()."""

    def __init__(self, serialized: bytes, warnings: Sequence[str], plan: Any):
        self._serialized = serialized
        self._plan = plan  # the checked scenario, planned once: what simulate() runs
        self.warnings = list(warnings)

    def text(self) -> str:
        """The scenario as protobuf text, every field shown (`murmur sim --print-scenario`)."""
        return _murmur.scenario_text(self._serialized)

    def __repr__(self) -> str:
        return f"<murmur.Scenario ({len(self._serialized)} bytes); .text() shows it>"


ScenarioLike = Union[None, "Scenario", dict, str, "os.PathLike[str]"]


def load_scenario(scenario: ScenarioLike = None, **overrides: Any) -> Scenario:
    """The scenario `murmur sim` would run, checked.

    `scenario` is None (the defaults), a dict, protobuf text or JSON, or a
    path to a scenario file (.textproto or .json, as `murmur sim --scenario`
    reads). A dict holds flat field names (`nodes`, `fault_drop`, as the
    keywords) and/or nested messages as in a file (`{"spec": {...}}`).
    Keyword `overrides` are applied last, like `murmur sim` flags after
    --scenario. Raises ScenarioError naming an unknown field or a bad value,
    TypeError for a value of the wrong type.
    """
    if isinstance(scenario, Scenario):
        if overrides:
            raise TypeError("overrides cannot apply to a loaded Scenario; pass them to load_scenario")
        return scenario
    kind, source = "default", ""
    flat: List[Tuple[str, Any]] = []
    if scenario is None:
        pass
    elif isinstance(scenario, dict):
        nested = {}
        for key, value in scenario.items():
            if not isinstance(key, str):
                raise TypeError(f"scenario keys are field names (str), got {key!r}")
            if isinstance(value, dict):
                if not _flatten_nested(key, value, flat):
                    nested[key] = value
            else:
                flat.append((key, value))
        if nested:
            import json

            kind, source = "text", json.dumps(nested)
    elif isinstance(scenario, os.PathLike):
        kind, source = "path", os.fspath(scenario)
    elif isinstance(scenario, str):
        kind = "path" if os.path.isfile(scenario) or _looks_like_path(scenario) else "text"
        source = scenario
    else:
        raise TypeError(
            f"scenario must be None, a dict, protobuf text, a path or a Scenario, got {type(scenario).__name__}")
    flat.extend(overrides.items())
    pairs = [(name, _value_text(name, value)) for name, value in flat]
    serialized, warnings, plan = _murmur.load_scenario(kind, source, pairs)
    return Scenario(serialized, warnings, plan)


# --------------------------------------------------------------------------
# Results

_COLUMNS = ("round", "virtual_s", "wall_s", "acc_mean", "acc_min", "acc_max", "loss_mean", "avg_acc",
            "avg_loss", "train_loss", "consensus", "bytes_sent", "bytes_received", "messages_lost", "online",
            "epsilon", "stop")


class Metrics:
    """The evaluation points of a run: the columns of `murmur sim --metrics-csv`, one row per point.

    `metrics["avg_acc"]` is a NumPy array (uint64 for counts, float64 for
    measures; `stop` is a list of str, empty but on the last point);
    `metrics.rows` a list of dicts; `metrics.to_pandas()` a DataFrame.
    """

    columns: Tuple[str, ...] = _COLUMNS

    def __init__(self, columns: Dict[str, Any]):
        self._columns = columns

    def __getitem__(self, name: str):
        if name not in self._columns:
            raise KeyError(f"no metrics column '{name}' (columns: {', '.join(self.columns)})")
        return self._columns[name]

    def __len__(self) -> int:
        return len(self._columns["round"])

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        return iter(self.rows)

    @property
    def arrays(self) -> Dict[str, Any]:
        """Column name -> NumPy array (`stop`: list of str)."""
        return dict(self._columns)

    @property
    def rows(self) -> List[Dict[str, Any]]:
        """One dict per evaluation point, Python ints and floats."""
        lists = {c: (v.tolist() if isinstance(v, np.ndarray) else list(v)) for c, v in self._columns.items()}
        return [{c: lists[c][i] for c in self.columns} for i in range(len(self))]

    def to_pandas(self):
        """A pandas DataFrame with the same columns (ImportError without pandas)."""
        import pandas as pd

        return pd.DataFrame({c: self._columns[c] for c in self.columns})

    def __repr__(self) -> str:
        return f"<murmur.Metrics {len(self)} points; columns {', '.join(self.columns)}>"


@dataclass(frozen=True)
class Final:
    """The end of a run, as `murmur sim` prints it under its table."""

    round: int  # the last evaluated round
    avg_acc: float  # averaged (federated: global) model test accuracy
    avg_loss: float
    acc_mean: float  # the evaluated nodes' own models
    acc_min: float
    acc_max: float
    stop_reason: str
    bytes_sent: int
    messages_lost: int
    rounds_done: int
    wall_s: float
    virtual_s: float
    rounds_per_s: float
    federated: bool
    description: str
    evaluated_nodes: int
    learning_nodes: int
    params_per_node: int
    messages_sent: int
    dense_bytes: float  # bytes the messages would take as dense fp32 models
    peak_rss_bytes: int
    state_bytes: int
    epsilon: float  # DP-FedAvg's spent epsilon; 0 otherwise
    contributors: int  # federated: clients or edges with an accepted result
    clients: int
    faults: Dict[str, int] = field(default_factory=dict)
    # Received updates the nodes refused before use, by reason (docs/security.md, Insiders).
    refused: Dict[str, int] = field(default_factory=dict)


class SimulationResult:
    """What simulate() returns: `.metrics` (Metrics), `.final` (Final) and `.scenario` (Scenario)."""

    def __init__(self, raw: Dict[str, Any], scenario: Scenario):
        self.metrics = Metrics(raw["columns"])
        s = raw["summary"]
        m = self.metrics
        last = len(m) - 1
        self.final = Final(
            round=int(m["round"][last]), avg_acc=float(m["avg_acc"][last]), avg_loss=float(m["avg_loss"][last]),
            acc_mean=float(m["acc_mean"][last]), acc_min=float(m["acc_min"][last]),
            acc_max=float(m["acc_max"][last]), stop_reason=s["stop_reason"],
            bytes_sent=int(m["bytes_sent"][last]), messages_lost=int(m["messages_lost"][last]),
            rounds_done=s["rounds_done"], wall_s=s["wall_s"], virtual_s=s["virtual_s"],
            rounds_per_s=s["rounds_per_s"], federated=s["federated"], description=s["description"],
            evaluated_nodes=s["evaluated_nodes"], learning_nodes=s["learning_nodes"],
            params_per_node=s["params_per_node"], messages_sent=s["messages_sent"],
            dense_bytes=s["dense_bytes"], peak_rss_bytes=s["peak_rss_bytes"], state_bytes=s["state_bytes"],
            epsilon=s["epsilon"], contributors=s["contributors"], clients=s["clients"], faults=s["faults"],
            refused=s["refused"])
        self.scenario = scenario

    def __repr__(self) -> str:
        f = self.final
        return (f"<murmur.SimulationResult {len(self.metrics)} points, round {f.round}: "
                f"avg_acc {f.avg_acc:.4f}, stopped: {f.stop_reason}>")


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped simulate() between events; `.result` holds the run up to there."""

    def __init__(self, result: SimulationResult):
        super().__init__("the simulation was interrupted (the result so far is in .result)")
        self.result = result


ProgressFn = Callable[[int, int, Optional[Dict[str, Any]]], Any]


def _tqdm_progress(total_hint: Optional[int]):
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None, None
    bar = tqdm(total=total_hint, unit="round", desc="murmur")

    def update(done: int, total: int, point: Optional[Dict[str, Any]]) -> None:
        if bar.total != total:
            bar.total = total
        bar.n = done
        if point is not None:
            bar.set_postfix(avg_acc=f"{point['avg_acc']:.4f}", refresh=False)
        bar.refresh()

    return update, bar


def _text_progress(stream):
    state = {"last": -1}

    def update(done: int, total: int, point: Optional[Dict[str, Any]]) -> None:
        pct = int(100 * done / total) if total else 100
        if pct == state["last"] and point is None:
            return
        state["last"] = pct
        acc = f"  avg-model acc {point['avg_acc']:.4f}" if point is not None else ""
        stream.write(f"\rmurmur: round {done}/{total} ({pct}%){acc}   ")
        stream.flush()

    return update


def simulate(scenario: ScenarioLike = None, *, progress: Union[None, bool, ProgressFn] = None,
             learner: Optional[Callable[[Any], Any]] = None, initial=None,
             evaluate: Optional[Callable[..., Tuple[float, float]]] = None, **overrides: Any) -> SimulationResult:
    """Runs a scenario in murmur's simulator, as `murmur sim` does.

    `scenario` and `overrides` are as load_scenario() takes them:
    `murmur.simulate("examples/vehicles.textproto", nodes=48)`. `progress`:
    None (quiet), True (a tqdm bar when tqdm is installed, otherwise a line
    on stderr), or a callable `progress(done, total, point)` called as
    rounds complete, with `point` the metrics row (dict) after an evaluation
    and None otherwise; an exception it raises stops the run and propagates.

    `learner` trains the nodes with Python code instead of the spec's
    model: `learner(share)` is called once per learning node and returns an
    object with `train(params, steps) -> loss` and `gradient(params, grad)
    -> loss` (see docs/python.md, "Learners written in Python"). `initial`
    (a float32 array) is every node's first model (default: the spec
    model's initialization); `evaluate(params, features, labels, samples)
    -> (accuracy, loss)` measures a model on test samples (default: the
    spec's model, which then must have the learners' parameter count).

    The GIL is released while the simulation runs (Python learners and
    callbacks take it back for each call). Ctrl-C stops it between events
    and raises Interrupted (a KeyboardInterrupt) carrying the result so far.
    Returns a SimulationResult.
    """
    loaded = load_scenario(scenario, **overrides)
    callback: Optional[ProgressFn] = None
    bar = None
    if progress is True:
        callback, bar = _tqdm_progress(None)
        if callback is None:
            callback = _text_progress(sys.stderr)
    elif callable(progress):
        callback = progress
    elif progress not in (None, False):
        raise TypeError(f"progress must be None, True, False or a callable, got {type(progress).__name__}")
    import signal

    on_main = threading.current_thread() is threading.main_thread()
    handle_sigint = on_main and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    try:
        raw = _murmur.run(loaded._plan, callback, handle_sigint, learner, initial, evaluate)
    finally:
        if bar is not None:
            bar.close()
        elif progress is True:
            sys.stderr.write("\n")
    result = SimulationResult(raw, loaded)
    if raw["interrupted"]:
        raise Interrupted(result)
    return result


# --------------------------------------------------------------------------
# Topologies


def topology_kinds() -> List[str]:
    """The kinds topology() builds (as `murmur topology --help` lists them)."""
    return list(_murmur.topology_kinds())


@dataclass(frozen=True)
class Spectral:
    rho: float  # second-largest eigenvalue magnitude (or the product's contraction)
    gap: float  # 1 - rho
    converged: bool
    method: str
    seconds: float


class Topology:
    """A topology's round 0 graph and mixing matrix, and the figures `murmur topology` prints."""

    def __init__(self, raw: Dict[str, Any]):
        self.kind: str = raw["kind"]
        self.nodes: int = raw["nodes"]
        self.num_edges: int = raw["num_edges"]
        self.directed: bool = raw["directed"]
        self.edges = raw["edges"]  # (num_edges, 2) uint32: u < v undirected, u -> v directed
        self.degree_min: int = raw["degree_min"]
        self.degree_mean: float = raw["degree_mean"]
        self.degree_max: int = raw["degree_max"]
        self.connected: bool = raw["connected"]
        self.diameter = raw["diameter"]  # int, or math.inf when not connected
        self.diameter_exact: bool = raw["diameter_exact"]
        self.spectral = Spectral(**raw["spectral"])
        self.period: int = raw["period"]  # 1 static, p periodic, 0 random each round
        self.rounds: Optional[int] = raw.get("rounds")
        self.contraction: Optional[Spectral] = Spectral(**raw["contraction"]) if "contraction" in raw else None
        self.per_round: Optional[float] = raw.get("per_round")
        self._csr = [(data, indices, indptr) for indptr, indices, data in raw["mixing"]]

    @property
    def rho(self) -> float:
        return self.spectral.rho

    @property
    def gap(self) -> float:
        return self.spectral.gap

    def mixing_matrix(self, dense: Optional[bool] = None, round: int = 0):
        """The mixing matrix W of `round` (row i: the weights node i mixes with).

        Round 0 for every kind; for a time-varying kind, every round its
        contraction covers (0 .. rounds - 1). A scipy.sparse CSR matrix when
        scipy is installed, else a dense NumPy array; `dense=True` /
        `dense=False` asks for one of them.
        """
        if isinstance(round, bool) or not isinstance(round, numbers.Integral) or not 0 <= round < len(self._csr):
            raise TopologyError(f"round {round!r} is not kept: rounds 0 to {len(self._csr) - 1} are "
                                f"(pass rounds= to topology() for more of a time-varying kind)")
        data, indices, indptr = self._csr[round]
        if dense is not True:
            try:
                import scipy.sparse
            except ImportError:
                if dense is False:
                    raise
            else:
                return scipy.sparse.csr_matrix((data, indices, indptr), shape=(self.nodes, self.nodes))
        w = np.zeros((self.nodes, self.nodes))
        for i in range(self.nodes):
            w[i, indices[indptr[i]:indptr[i + 1]]] = data[indptr[i]:indptr[i + 1]]
        return w

    @property
    def mixing(self):
        """mixing_matrix(): scipy sparse when scipy is installed, dense NumPy otherwise."""
        return self.mixing_matrix()

    def __repr__(self) -> str:
        return (f"<murmur.Topology {self.kind}: {self.nodes} nodes, {self.num_edges} edges, "
                f"rho {self.spectral.rho:.6f}>")


def topology(kind: str = "ring", nodes: Optional[int] = None, *, seed: int = 1, weights: Optional[str] = None,
             degree: int = 4, prob: float = 0.0, beta: float = 0.1, radius: float = 0.0,
             file: Optional[Union[str, "os.PathLike[str]"]] = None, directed: bool = False,
             rounds: Optional[int] = None, edges: Optional[str] = None, devices: str = "uniform",
             links: Optional[str] = None, measured: Optional[Union[str, "os.PathLike[str]"]] = None,
             model_bytes: float = 407080) -> Topology:
    """Builds a topology as `murmur topology KIND` does and returns its figures.

    `kind` is a kind's name or, as in a job's topology field, the name with
    its parameters ("regular:4", "erdos-renyi:0.3", "edges:0 1;1 2;2 0"),
    which then replace the keywords'.

    Parameters are the CLI's flags: nodes (default 16; kinds 'file' and
    'edges': the list's), seed, weights (uniform, mh, maxdeg, lazy-*, push-sum; None: the
    kind's default), degree (regular, small-world), prob (erdos-renyi; 0:
    2 ln(n)/n), beta (small-world), radius (geometric; 0: sqrt(2 ln(n)/(pi n))),
    file and directed (kind 'file'), edges (kind 'edges': the same lines
    inline, separated by ';', "0 1;1 2;2 0"), rounds (the product's length for a
    time-varying kind; None: its period or ceil(log2 n)); the link-aware kinds
    take their costs from devices and links (the simulator's models, as
    `murmur sim --devices --links` names them) or measured (a `murmur peers
    --rtt-csv` file), for messages of model_bytes. Raises TopologyError
    naming a bad parameter.
    """
    if not isinstance(kind, str):
        raise TypeError(f"topology kind wants a string, got {type(kind).__name__} {kind!r}")
    if nodes is None:  # a listed kind ("edges", "edges:0 1;1 2", "file:F") or measured links: their count
        nodes = 0 if kind.split(":", 1)[0] in ("file", "edges") or measured is not None else 16
    for name, value in (("nodes", nodes), ("seed", seed), ("degree", degree)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"topology {name} wants a whole number, got {value!r}")
        if value < 0:
            raise TopologyError(f"topology {name} must not be negative, got {value}")
    for name, value in (("prob", prob), ("beta", beta), ("radius", radius)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"topology {name} wants a number, got {type(value).__name__} {value!r}")
    if rounds is not None and (isinstance(rounds, bool) or not isinstance(rounds, numbers.Integral) or rounds < 1):
        raise TopologyError(f"rounds must be in [1, 4096], got {rounds!r}")
    for name, value in (("devices", devices), ("links", links)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"topology {name} wants a string, got {type(value).__name__} {value!r}")
    if isinstance(model_bytes, bool) or not isinstance(model_bytes, numbers.Real):
        raise TypeError(f"topology model_bytes wants a number, got {type(model_bytes).__name__} {model_bytes!r}")
    raw = _murmur.topology(kind, int(nodes), int(seed), weights or "", int(degree), float(prob), float(beta),
                           float(radius), os.fspath(file) if file is not None else "", bool(directed),
                           int(rounds or 0), edges or "", devices or "uniform", links or "",
                           os.fspath(measured) if measured is not None else "", float(model_bytes))
    return Topology(raw)


# --------------------------------------------------------------------------
# Compression


def compress(spec: str, array, state: Optional[CompressorState] = None, *, seed: int = 0, node: int = 0,
             shapes: Optional[Sequence[Sequence[int]]] = None) -> Tuple[bytes, CompressorState]:
    """Compresses a float32 array with a murmur compressor; returns (wire bytes, state).

    `spec` is a compressor spec as a scenario's `compression` field takes it
    ("topk:0.01,ef", "qsgd:16", "powersgd:2"; docs/compression.md). The bytes
    are exactly what a murmur node sends (wire layout version 1). `state`
    (None on the first call) carries the error-feedback residual, round and
    random stream to the next call; `seed` and `node` key the random stream
    of a new state as a node's is keyed. `shapes` splits the array into
    tensors (PowerSGD compresses each 2-D tensor); None: one flat tensor.
    `array` must be a one-dimensional, contiguous float32 NumPy array
    (TypeError / CompressionError otherwise); it is read in place.
    """
    if not isinstance(spec, str):
        raise TypeError(f"compress spec wants a string, got {type(spec).__name__}")
    if state is not None and not isinstance(state, CompressorState):
        raise TypeError(f"compress state wants a CompressorState or None, got {type(state).__name__}")
    seed = _whole(seed, "compress seed", 0, (1 << 64) - 1)
    node = _whole(node, "compress node", 0, (1 << 32) - 1)
    shape_list = []
    if shapes is not None:
        # A list of tensor shapes: [[5000, 5000]] for one 5000 x 5000 matrix.
        if isinstance(shapes, (str, bytes)) or not isinstance(shapes, (list, tuple)):
            raise TypeError(f"compress shapes wants a list of tensor shapes such as [[rows, cols]], got {shapes!r}")
        for s in shapes:
            if isinstance(s, (str, bytes)) or not isinstance(s, (list, tuple, np.ndarray)):
                raise TypeError("compress shapes wants a list of tensor shapes such as [[rows, cols]], got an "
                                f"entry {s!r} (a shape is a list of whole numbers)")
            shape_list.append([_whole(d, "compress shapes' dimension", 0, (1 << 62)) for d in s])
    return _murmur.compress(spec, array, state, seed, node, shape_list)


def _whole(value: Any, what: str, low: int, high: int) -> int:
    """`value` as an int in [low, high]: TypeError for a non-integer (bool
    included), ValueError naming `what` and the range otherwise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} wants a whole number, got {type(value).__name__} {value!r}")
    if not low <= int(value) <= high:
        raise ValueError(f"{what} must be in [{low}, {high}], got {int(value)}")
    return int(value)


def decompress(wire: bytes, *, max_elements: int = 1 << 30):
    """The dense float32 array that murmur wire bytes stand for.

    The decoder is the one murmur nodes run on untrusted input: truncated,
    malformed or oversized (more than `max_elements`) updates raise
    CompressionError naming what is wrong.
    """
    if not isinstance(wire, (bytes, bytearray, memoryview)):
        raise TypeError(f"wire must be bytes, got {type(wire).__name__}")
    return _murmur.decompress(bytes(wire), _whole(max_elements, "decompress max_elements", 1, (1 << 64) - 1))
