"""A flag given without its value (the end of a command line cut short, a value forgotten) is refused in one line
that names the values it takes when it has a fixed set of them, as a wrong value's refusal does."""
from __future__ import annotations

import pytest
from conftest import runModule

from rl_baselines.sweeps.pipeline import buildParser
from srl_toolbox.cli import CLIParser, UsageError


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


def test_the_command_says_it_in_one_line_with_exit_code_2(tmp_path) -> None:
    result = runModule("rl_baselines.pipeline", "--log-dir", str(tmp_path / "logs"), "--executor")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr == "error: argument --executor: expected one argument (choose from 'local', 'ray')\n"
    assert not (tmp_path / "logs").exists()
