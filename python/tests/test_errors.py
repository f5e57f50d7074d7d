"""Bad input raises a clear Python exception naming what is wrong, and never crashes the interpreter."""

import numpy as np
import pytest

import murmur


def test_an_unknown_key_is_named_with_the_near_ones():
    with pytest.raises(murmur.ScenarioError, match=r"unknown scenario field 'nodez' \(did you mean 'nodes'"):
        murmur.simulate(nodez=8)
    with pytest.raises(murmur.ScenarioError, match="unknown scenario field 'xyzzy_plugh'$"):
        murmur.load_scenario({"xyzzy_plugh": 1})
    assert issubclass(murmur.ScenarioError, ValueError)


def test_an_unknown_field_in_text_or_a_nested_dict_is_named():
    with pytest.raises(murmur.ScenarioError, match="node_count"):
        murmur.load_scenario("spec { node_count: 3 }")
    with pytest.raises(murmur.ScenarioError, match="node_count"):
        murmur.load_scenario({"spec": {"node_count": 3}})


def test_a_nested_dict_is_converted_and_refused_as_the_flat_form():
    # {"spec": {"nodes": "4"}} was taken (protobuf's JSON reads "4" and 4.0 as
    # numbers) while nodes="4" raised TypeError; True gave "invalid value true
    # for type TYPE_UINT32" and a misspelt key no suggestion.
    for value, kind in (("4", "str"), (4.0, "float"), (True, "bool")):
        with pytest.raises(TypeError, match=f"scenario field 'nodes' wants a whole number, got {kind}"):
            murmur.load_scenario({"spec": {"nodes": value}})
    with pytest.raises(murmur.ScenarioError, match=r"unknown scenario field 'nodez' \(did you mean 'nodes'"):
        murmur.load_scenario({"spec": {"nodez": 8}})
    with pytest.raises(murmur.ScenarioError, match=r"unknown scenario field 'fault_dorp' \(did you mean 'fault_drop'"):
        murmur.load_scenario({"faults": {"dorp": 0.1}})
    with pytest.raises(TypeError, match="scenario field 'fault_drop' wants a number, got str"):
        murmur.load_scenario({"faults": {"drop": "0.1"}})
    nested = murmur.load_scenario({"spec": {"nodes": 12, "lr": 0.5}, "faults": {"drop": 0.25}, "threads": 1})
    flat = murmur.load_scenario(nodes=12, lr=0.5, fault_drop=0.25, threads=1)
    assert nested.text() == flat.text()


def test_a_bad_value_is_named_as_the_cli_names_it(cli):
    cli_message = cli("sim", "--nodes", 0, check=False).stderr
    assert "spec field 'nodes' must be in [2, 10000000], got 0" in cli_message
    with pytest.raises(murmur.ScenarioError, match=r"spec field 'nodes' must be in \[2, 10000000\], got 0"):
        murmur.load_scenario(nodes=0)
    with pytest.raises(murmur.ScenarioError, match="scenario field 'nodes' wants a whole number"):
        murmur.load_scenario(nodes=-1)
    with pytest.raises(murmur.ScenarioError, match="lr_schedule"):
        murmur.load_scenario(lr_schedule="linear")


def test_values_of_the_wrong_type_raise_type_errors_naming_the_field():
    with pytest.raises(TypeError, match="scenario field 'nodes' wants a whole number, got float 8.5"):
        murmur.load_scenario(nodes=8.5)
    with pytest.raises(TypeError, match="scenario field 'nodes' wants a whole number, got str"):
        murmur.load_scenario(nodes="8")
    with pytest.raises(TypeError, match="'lr' wants a number, got str"):
        murmur.load_scenario(lr="fast")
    with pytest.raises(TypeError, match="'topology' wants a string"):
        murmur.load_scenario(topology=3)
    with pytest.raises(TypeError, match="a list of whole numbers"):
        murmur.load_scenario(attackers="1,2")
    with pytest.raises(TypeError, match="scenario must be None, a dict"):
        murmur.load_scenario(42)
    with pytest.raises(murmur.ScenarioError, match="wants a number"):
        murmur.load_scenario(lr=float("nan"))


def test_numpy_scalars_and_lists_are_taken():
    s = murmur.load_scenario(nodes=np.int64(12), lr=np.float32(0.5), attackers=[1, np.uint32(2)],
                             attack="sign-flip", algorithm="fedavg")
    text = s.text()
    assert "nodes: 12" in text and "lr: 0.5" in text and "attackers: 1" in text and "attackers: 2" in text


def test_files_that_do_not_exist_or_do_not_parse_are_named(tmp_path):
    with pytest.raises(murmur.ScenarioError, match="no_such_file.textproto"):
        murmur.load_scenario("no_such_file.textproto")
    bad = tmp_path / "bad.textproto"
    bad.write_text("spec { nodes: }\n")
    with pytest.raises(murmur.ScenarioError, match=r"bad.textproto.*1"):
        murmur.load_scenario(bad)
    with pytest.raises(murmur.ScenarioError, match="line"):
        murmur.load_scenario("spec { nodes: 3 ")


def test_the_clis_plot_field_is_refused_not_ignored():
    with pytest.raises(murmur.ScenarioError, match="scenario field 'plot'"):
        murmur.simulate(plot="run.png")


def test_progress_must_be_callable():
    with pytest.raises(TypeError, match="progress must be"):
        murmur.simulate(nodes=4, rounds=1, dataset="synthetic:blobs", model="softmax", progress="yes")


def test_a_scenario_that_cannot_be_built_raises_before_running():
    with pytest.raises(murmur.ScenarioError, match="no_such_dir"):
        murmur.simulate(dataset="idx:no_such_dir", rounds=1)
