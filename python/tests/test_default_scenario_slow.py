"""The default scenario whole (64 nodes, 300 rounds): murmur.simulate's metrics equal `murmur sim --metrics-csv`'s."""

import murmur
from test_simulate import _assert_metrics_equal_csv, _read_csv


def test_the_whole_default_scenario_equals_the_clis(cli, tmp_path):
    csv_path = tmp_path / "cli.csv"
    out = cli("sim", "--quiet", "--metrics-csv", csv_path).stdout
    r = murmur.simulate()
    rows = _read_csv(csv_path)
    _assert_metrics_equal_csv(r.metrics, rows)
    assert len(rows) == 7 and r.final.round == 300 and r.final.stop_reason == "rounds done"
    assert f"final (round 300): averaged-model test accuracy {r.final.avg_acc:.4f}" in out
