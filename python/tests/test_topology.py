"""murmur.topology against `murmur topology`, closed forms and NumPy's eigensolver."""

import json
import math

import numpy as np
import pytest
import scipy.sparse

import murmur


def _cli_figures(cli, *args):
    """The lines `murmur topology` prints, as {name: rest of line}."""
    out = cli("topology", *args).stdout
    figures = {}
    for line in out.splitlines():
        name, _, rest = line.partition("  ")
        figures[name.strip()] = rest.strip()
    return figures


CASES = [
    ("ring", dict(nodes=16)),
    ("torus", dict(nodes=24)),
    ("hypercube", dict(nodes=32)),
    ("exponential", dict(nodes=20)),
    ("erdos-renyi", dict(nodes=40, seed=3)),
    ("small-world", dict(nodes=30, degree=4, beta=0.2, seed=5)),
    ("regular", dict(nodes=30, degree=3, seed=2, weights="maxdeg")),
    ("geometric", dict(nodes=50, seed=7)),
    ("star", dict(nodes=10, weights="lazy-mh")),
    ("one-peer-exponential", dict(nodes=16)),
    ("random-matching", dict(nodes=12, seed=4, rounds=6)),
]


def _flags(params):
    flags = []
    for k, v in params.items():
        flags += [f"--{k}", v]
    return flags


@pytest.mark.parametrize("kind,params", CASES, ids=[c[0] for c in CASES])
def test_figures_equal_the_clis(cli, kind, params):
    t = murmur.topology(kind, **params)
    f = _cli_figures(cli, kind, *_flags(params))
    assert f["nodes"] == str(t.nodes)
    assert f["edges"].split()[0] == str(t.num_edges) == str(len(t.edges))
    assert f["degree"].startswith(f"min {t.degree_min}  mean {t.degree_mean:.2f}  max {t.degree_max}")
    assert f["connected"] == ("yes" if t.connected else "no")
    assert f["diameter"].split()[0] == (str(t.diameter) if t.connected else "infinite")
    assert f["rho"].split()[0] == f"{t.spectral.rho:.9f}"
    assert f["spectral gap"] == f"{t.spectral.gap:.9f}"
    if t.period != 1:
        assert f["contraction"].split()[0] == f"{t.contraction.rho:.9f}"
        assert f"over {t.rounds} rounds" in f["contraction"]
        assert f["per round"] == f"{t.per_round:.9f}"
    else:
        assert "contraction" not in f and t.contraction is None


@pytest.mark.parametrize("kind,params", CASES[:9], ids=[c[0] for c in CASES[:9]])
def test_edges_and_weights_equal_the_clis_export(cli, kind, params):
    t = murmur.topology(kind, **params)
    exported = json.loads(cli("topology", kind, *_flags(params), "--export", "json").stdout)
    w = t.mixing_matrix(dense=True)
    assert isinstance(t.mixing, scipy.sparse.csr_matrix)
    assert np.array_equal(t.mixing.toarray(), w)
    # The CLI's edges are ours; its weight for u-v is W[v, u] (the weight of
    # u's value at v), printed with 6 significant digits.
    ours = {(int(u), int(v)) for u, v in t.edges}
    theirs = set()
    assert exported["nodes"] == t.nodes and exported["directed"] == t.directed
    for u, v, weight in exported["edges"]:
        theirs.add((u, v))
        assert weight == pytest.approx(w[v, u], rel=1e-5)
    assert ours == theirs
    # Rows sum to one, and the weights sit on the graph's edges and the diagonal only.
    assert np.allclose(w.sum(axis=1), 1.0, atol=1e-12)
    support = np.eye(t.nodes, dtype=bool)
    for u, v in ours:  # an arc u -> v puts u's value at v: W[v, u]
        support[v, u] = True
        if not t.directed:
            support[u, v] = True
    assert not np.any(w[~support])


@pytest.mark.parametrize("n", [8, 16, 33])
def test_the_ring_gap_is_the_closed_form(n):
    # Metropolis-Hastings on a ring gives 1/3 to each neighbour and to itself:
    # a circulant matrix with eigenvalues 1/3 + 2/3 cos(2 pi k / n).
    t = murmur.topology("ring", n)
    assert np.allclose(t.mixing_matrix(dense=True)[0, [n - 1, 0, 1]], 1 / 3)
    expected = max(abs(1 / 3 + 2 / 3 * math.cos(2 * math.pi * k / n)) for k in range(1, n))
    assert t.rho == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("kind,params", CASES[:9], ids=[c[0] for c in CASES[:9]])
def test_rho_equals_numpys_eigenvalues(kind, params):
    t = murmur.topology(kind, **params)
    w = t.mixing_matrix(dense=True)
    n = t.nodes
    moduli = np.sort(np.abs(np.linalg.eigvals(w - np.ones((n, n)) / n)))
    if np.allclose(w, w.T):
        assert t.rho == pytest.approx(moduli[-1], abs=1e-9)
    else:  # a non-symmetric W: the modulus of the eigenvalue next to 1
        assert t.rho == pytest.approx(moduli[-1], abs=1e-7)


def test_bad_parameters_are_named():
    with pytest.raises(murmur.TopologyError, match="unknown topology 'rng'.*ring"):
        murmur.topology("rng")
    with pytest.raises(murmur.TopologyError, match="prob must be in"):
        murmur.topology("erdos-renyi", 10, prob=1.5)
    with pytest.raises(murmur.TopologyError, match="weights cannot apply to 'random-matching'"):
        murmur.topology("random-matching", 8, weights="mh")
    with pytest.raises(murmur.TopologyError, match="nodes must be at least 1"):
        murmur.topology("ring", 0)
    with pytest.raises(murmur.TopologyError, match="rounds must be in"):
        murmur.topology("one-peer-exponential", 8, rounds=5000)
    with pytest.raises(murmur.TopologyError, match="push-sum|weights"):
        murmur.topology("ring", 8, weights="heavy")
    with pytest.raises(TypeError, match="nodes wants a whole number"):
        murmur.topology("ring", 8.5)
    with pytest.raises(murmur.TopologyError):
        murmur.topology("file", file="no_such_edges.txt")
    assert "ring" in murmur.topology_kinds()
    with pytest.raises(murmur.TopologyError, match="self-loop at node 2"):
        murmur.topology("edges", edges="0 1;2 2")


@pytest.mark.parametrize("text,kind,params", [
    ("regular:4", "regular", dict(degree=4)),
    ("erdos-renyi:0.3", "erdos-renyi", dict(prob=0.3)),
    ("small-world:4:0.2", "small-world", dict(degree=4, beta=0.2)),
])
def test_a_kind_with_parameters_is_read_as_the_cli_reads_it(cli, text, kind, params):
    # "regular:4" was "unknown topology" in Python while `murmur topology regular:4` took it.
    t = murmur.topology(text, 16, seed=3)
    same = murmur.topology(kind, 16, seed=3, **params)
    assert t.kind == kind
    assert sorted(map(tuple, t.edges.tolist())) == sorted(map(tuple, same.edges.tolist()))
    f = _cli_figures(cli, text, "--nodes", "16", "--seed", "3")
    assert f["rho"].split()[0] == f"{t.spectral.rho:.9f}"
    edges = murmur.topology("edges:0 1;1 2;2 0")
    assert (edges.nodes, edges.num_edges) == (3, 3)
    with pytest.raises(TypeError, match="topology kind wants a string"):
        murmur.topology(4)


@pytest.mark.parametrize("flags,params", [
    (["--links", "sites:4:1000:10"], dict(links="sites:4:1000:10")),
    (["--devices", "phone:0.5,iot:0.5", "--model-bytes", "1000000"], dict(devices="phone:0.5,iot:0.5", model_bytes=1e6)),
])
def test_link_aware_kinds_take_the_clis_link_costs(cli, flags, params):
    # murmur.topology("link-aware", 16) told the user to pass --links or --devices,
    # and links= was a TypeError.
    for kind in ("link-aware", "link-aware-ring"):
        t = murmur.topology(kind, 16, seed=2, **params)
        exported = json.loads(cli("topology", kind, "--nodes", 16, "--seed", 2, *flags, "--export", "json").stdout)
        cli_edges = sorted(tuple(sorted((u, v))) for u, v, _ in exported["edges"])
        assert sorted(tuple(sorted(e)) for e in t.edges.tolist()) == cli_edges


def test_link_aware_kinds_take_measured_links(tmp_path):
    rtt = tmp_path / "rtt.csv"
    rtt.write_text("from,to,rtt_ms\n" + "".join(f"{u},{v},{0.2 if (u < 4) == (v < 4) else 30}\n"
                                                 for u in range(8) for v in range(8) if u != v))
    ring = murmur.topology("link-aware-ring", measured=rtt)
    assert ring.nodes == 8
    crossings = sum((u < 4) != (v < 4) for u, v in ring.edges.tolist())
    assert crossings == 2
    with pytest.raises(murmur.TopologyError, match="measured links replace links and devices"):
        murmur.topology("link-aware-ring", measured=rtt, links="sites:2:1000:10")
    with pytest.raises(murmur.TopologyError, match="devices: "):
        murmur.topology("link-aware", 8, devices="toaster:1")
    with pytest.raises(TypeError, match="topology links wants a string"):
        murmur.topology("link-aware", 8, links=3)


def test_an_inline_edge_list_is_the_graph_it_lists():
    # A 4-cycle with one chord: the nodes, edges and degrees the list gives.
    t = murmur.topology("edges", edges="0 1;1 2;2 3;3 0;0 2")
    assert (t.nodes, t.num_edges, t.degree_min, t.degree_max) == (4, 5, 2, 3)
    assert sorted(map(tuple, t.edges.tolist())) == [(0, 1), (0, 2), (0, 3), (1, 2), (2, 3)]


@pytest.mark.parametrize("kind,params", [("one-peer-exponential", dict(nodes=16)),
                                         ("random-matching", dict(nodes=12, seed=4, rounds=6))])
def test_the_contraction_equals_numpys_over_the_kept_rounds(kind, params):
    # sigma_max((I - J) W_{r-1} ... W_0 (I - J)), J = 11^T / n (topology/spectral.h).
    t = murmur.topology(kind, **params)
    n = t.nodes
    product = np.eye(n)
    for r in range(t.rounds):
        w = t.mixing_matrix(dense=True, round=r)
        assert np.allclose(w.sum(axis=1), 1.0) and np.count_nonzero(w) <= 2 * n  # one peer at 1/2
        product = w @ product
    centre = np.eye(n) - np.ones((n, n)) / n
    sigma = np.linalg.svd(centre @ product @ centre, compute_uv=False)[0]
    assert t.contraction.rho == pytest.approx(sigma, abs=1e-9)
    with pytest.raises(murmur.TopologyError, match="is not kept"):
        t.mixing_matrix(round=t.rounds)
