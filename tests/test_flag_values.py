"""A flag given without its value (the end of a command line cut short, a value forgotten) is refused in one line
that names the values it takes when it has a fixed set of them, as a wrong value's refusal does."""
from __future__ import annotations

import pytest
from conftest import runModule

from rl_baselines.sweeps.pipeline import buildParser
from srl_toolbox.cli import CLIParser, UsageError, portNumber


def test_a_flag_without_its_value_names_its_choices() -> None:
    """It said only argparse's ``argument --executor: expected one argument``."""
    with pytest.raises(UsageError) as refusal:
        buildParser().parse_known_args(["--algo", "ppo2", "--executor"])
    assert str(refusal.value) == "argument --executor: expected one argument (choose from 'local', 'ray')"
    parser = CLIParser(prog="x")
    parser.add_argument("-m", "--mode", choices=("a", "b"))
    parser.add_argument("--sizes", nargs="+", type=int, choices=(1, 2))
    parser.add_argument("--name")
    for argv, message in ((["-m"], "argument -m/--mode: expected one argument (choose from 'a', 'b')"),
                          (["--sizes"], "argument --sizes: expected at least one argument (choose from '1', '2')"),
                          (["--name"], "argument --name: expected one argument")):  # no fixed values: as before
        with pytest.raises(UsageError) as refusal:
            parser.parse_args(argv)
        assert str(refusal.value) == message


def test_a_registry_flag_without_its_value_names_the_registered_names() -> None:
    """``--algo`` and ``--env`` take a registry's names, checked after parsing (no argparse choices): given without a
    value they said only ``expected one argument``."""
    parser = CLIParser(prog="x")
    parser.add_argument("-a", "--algo")
    parser.add_argument("--env", nargs="+")
    parser.add_argument("--name")
    parser.addValueChoices({"--algo": ("algorithms", ["ppo2", "a2c"]), "--env": ("envs", ["E1", "E2"]),
                            "--name": ("names", [])})  # no names known: nothing added
    for argv, message in ((["-a"], "argument -a/--algo: expected one argument (algorithms: ppo2, a2c)"),
                          (["--env"], "argument --env: expected at least one argument (envs: E1, E2)"),
                          (["--name"], "argument --name: expected one argument")):
        with pytest.raises(UsageError) as refusal:
            parser.parse_args(argv)
        assert str(refusal.value) == message
    with pytest.raises(UsageError) as refusal:
        buildParser().parse_known_args(["--algo"])
    assert str(refusal.value).startswith("argument --algo: expected at least one argument (algorithms: ")
    assert "ppo2" in str(refusal.value)


@pytest.mark.parametrize("module, argv, names", [
    ("rl_baselines.train", ["--algo"], "algorithms: "),
    ("rl_baselines.train", ["--algo", "ppo2", "--env"], "envs: "),
    ("rl_baselines.hyperparam_search", ["--algo"], "algorithms with a search space: "),
    ("srl_models.prepare", ["--env", "MobileRobotGymEnv-v0", "--srl-model"], "models: "),
    ("environments.dataset_generator", ["--env"], "envs: "),
    # --srl-model (and check_plugin's --env) named nothing: a plugin's SRL model could not be found this way
    ("rl_baselines.train", ["--algo", "ppo2", "--srl-model"], "SRL models: "),
    ("rl_baselines.pipeline", ["--srl-model"], "SRL models: "),
    ("rl_baselines.hyperparam_search", ["--srl-model"], "SRL models: "),
    ("rl_baselines.check_plugin", ["ppo2", "--srl-model"], "SRL models: "),
    ("rl_baselines.check_plugin", ["ppo2", "--env"], "envs: "),
    ("srl_models.train", ["--srl-model"], "models: "),
])
def test_each_command_names_the_registered_names(module, argv, names) -> None:
    result = runModule(module, *argv)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"error: argument {argv[-1]}: expected ") and f"({names}" in result.stderr
    if names.startswith("SRL models"):  # the env's observation modes and the SRL model kinds, plugins included
        assert "ground_truth" in result.stderr and "raw_pixels" in result.stderr and "autoencoder" in result.stderr
    assert result.stderr.count("\n") == 1


def test_the_command_says_it_in_one_line_with_exit_code_2(tmp_path) -> None:
    result = runModule("rl_baselines.pipeline", "--log-dir", str(tmp_path / "logs"), "--executor")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr == "error: argument --executor: expected one argument (choose from 'local', 'ray')\n"
    assert not (tmp_path / "logs").exists()


@pytest.mark.parametrize("raw", ["0", "-1", "abc", "70000"])
def test_a_port_out_of_range_names_the_ports(raw) -> None:
    """``--port 0`` (and -1, a word) said only "must be a positive integer", where 70000 named the ports 1..65535."""
    parser = CLIParser(prog="x")
    parser.add_argument("--port", type=portNumber)
    with pytest.raises(UsageError) as refusal:
        parser.parse_args(["--port", raw])
    assert str(refusal.value) == f"argument --port: {raw!r} is not a port number (1..65535)"
