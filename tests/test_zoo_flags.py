"""rl_zoo3's command-line habits on train and enjoy_baselines: each rl_zoo3 flag the command does not take is refused
in one line that names the toolbox's equivalent, and a misspelt flag is never pointed to its negation; enjoy's
``--render`` on the commands that draw images is refused, not read as ``--renderer``."""
from __future__ import annotations

import json

import pytest
from conftest import runFolder, runModule

from environments.dataset_generator import buildParser as generatorParser
from replay.enjoy_baselines import buildParser
from rl_baselines.core.registry import algoChoicesText
from rl_baselines.runs.train_checks import baseParser
from srl_models.prepare import buildParser as prepareParser
from srl_toolbox.cli import WINDOW_HINT, UsageError, flagsMeant


@pytest.mark.parametrize(("argv", "hint"), [
    (["-n", "300"], "rl_zoo3's -n/--n-timesteps is --num-timesteps here"),
    (["-f", "logs/"], "rl_zoo3's -f/--log-folder is --log-dir here"),
    (["--log-folder", "logs/"], "rl_zoo3's -f/--log-folder is --log-dir here"),
    (["--save-freq", "100"], "is --checkpoint-freq here"),
    (["-params", "learning_rate:0.001"], "is --hyperparam KEY:VALUE here"),
    (["--trained-agent", "a.zip"], "is --load-rl-model-path here"),
    (["--n-eval-envs", "2"], "not offered"),
    (["--progress"], "the progress bar is on by default (--no-progress hides it)"),
])
def test_train_names_the_equivalent_of_an_rl_zoo_flag(argv: list[str], hint: str) -> None:
    with pytest.raises(UsageError) as refusal:
        baseParser().parse_args(["--algo", "ppo2", *argv])
    message = str(refusal.value)
    assert message.startswith(f"unrecognized arguments: {' '.join(argv)} (") and hint in message
    assert "did you mean" not in message  # (--log-folder is not --srl-log-folder, --progress not --no-progress)


def test_rl_zoos_vec_env_is_trains_own() -> None:
    """rl_zoo3's --vec-env {dummy,subproc} was refused with a hint to --num-cpu: train takes it (and auto)."""
    assert baseParser().parse_args(["--algo", "ppo2", "--vec-env", "subproc"]).vec_env == "subproc"
    assert baseParser().parse_args(["--algo", "ppo2", "--vec-env", "dummy"]).vec_env == "dummy"


@pytest.mark.parametrize(("argv", "hint"), [
    (["--load-best"], "rl_zoo3's --load-best is --model best here"),
    (["-f", "logs/"], "is --log-dir RUN"),
    (["--no-render"], "no window opens without --render"),
    (["--stochastic"], "actions are sampled unless --deterministic"),
    (["--algo", "ppo2", "--env", "MobileRobotGymEnv-v0"], "the run folder names them"),
])
def test_enjoy_names_the_equivalent_of_an_rl_zoo_flag(argv: list[str], hint: str) -> None:
    with pytest.raises(UsageError) as refusal:
        buildParser().parse_args(["--log-dir", "run", *argv])
    message = str(refusal.value)
    assert hint in message and message.count(hint) == 1 and "did you mean" not in message


def test_enjoy_without_log_dir_names_the_equivalent_of_the_rl_zoo_flags_given() -> None:
    """rl_zoo3's ``enjoy --algo ppo2 --env ENV -f logs/`` gives no --log-dir: argparse refuses the missing flag before
    the unrecognized ones, and the refusal named only --log-dir; it names the equivalents of the rl_zoo3 flags too."""
    with pytest.raises(UsageError, match=r"^the following arguments are required: --log-dir \(rl_zoo3's "
                                         r"--algo/--env: not needed: the run folder names them \(its args.json\); "
                                         r"rl_zoo3's -f/--folder/--exp-id is --log-dir RUN \(the run's own folder\) "
                                         r"here\)$"):
        buildParser().parse_args(["--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "-f", "logs/"])
    with pytest.raises(UsageError, match=r"^the following arguments are required: --log-dir$"):
        buildParser().parse_args(["--num-timesteps", "3"])


def test_a_misspelt_flag_is_pointed_to_the_flag_meant_never_to_its_negation() -> None:
    assert flagsMeant(["--no-render"], ["--render", "--video"]) == ""
    assert flagsMeant(["--progress"], ["--no-progress"]) == ""
    assert flagsMeant(["--deterministc"], ["--deterministic", "--render"]) == "--deterministic"
    with pytest.raises(UsageError, match=r"^unrecognized arguments: --save-freq=5 --num-timestepz 9 \(rl_zoo3's "
                                         r"--save-freq is --checkpoint-freq here; did you mean --num-timesteps\?\)$"):
        baseParser().parse_args(["--save-freq=5", "--num-timestepz", "9"])


@pytest.mark.parametrize(("parser", "required"), [(baseParser, []), (generatorParser, []),
                                                  (prepareParser, ["--srl-model", "vae"])])
def test_enjoys_render_is_refused_not_read_as_renderer(parser, required: list[str]) -> None:
    """``--render`` (enjoy's window) was read as an abbreviation of ``--renderer`` and refused for lacking a renderer
    name: it is refused as a flag of its own, with where a window opens; real abbreviations still work."""
    with pytest.raises(UsageError) as refusal:
        parser().parse_args(["--env", "MobileRobotGymEnv-v0", "--render"])
    assert str(refusal.value) == f"unrecognized arguments: --render ({WINDOW_HINT})"
    assert "replay.enjoy_baselines" in WINDOW_HINT
    given = parser().parse_args(["--env", "MobileRobotGymEnv-v0", *required, "--rendere", "sprites"])
    assert given.renderer == "sprites"


def test_the_command_refuses_an_rl_zoo_flag_in_one_line_with_exit_code_2(tmp_path) -> None:
    result = runModule("rl_baselines.train", "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth",
                       "--no-vis", "-f", tmp_path / "logs", "-n", "300")
    assert result.returncode == 2 and not (tmp_path / "logs").exists()
    assert result.stderr.strip() == (f"error: unrecognized arguments: -f {tmp_path / 'logs'} -n 300 (rl_zoo3's "
                                     f"-f/--log-folder is --log-dir here; rl_zoo3's -n/--n-timesteps is "
                                     f"--num-timesteps here)")


def test_an_rl_zoo_algorithm_name_is_refused_with_the_name_here() -> None:
    assert algoChoicesText("ppo").startswith(" (rl_zoo3's ppo is ppo2 here); valid choices: ")
    assert algoChoicesText("dqn").startswith(" (rl_zoo3's dqn is deepq here (or qrdqn; SB3's own DQN is not offered))")
    assert algoChoicesText("nope").startswith("; valid choices: ")


def test_a_run_of_a_plugin_named_like_an_rl_zoo_algorithm_gets_no_rl_zoo_hint(tmp_path) -> None:
    """A run trained with a plugin's `dqn`, replayed or resumed once the plugin is uninstalled, was refused with
    "(rl_zoo3's dqn is deepq here ...)": the run folder's name is no rl_zoo3 name the user typed."""
    trained = runModule("rl_baselines.train", "--algo", "random_agent", "--env", "MobileRobotGymEnv-v0", "--srl-model",
                        "ground_truth", "--num-timesteps", "50", "--log-dir", tmp_path / "logs", "--no-vis",
                        "--no-progress")
    assert trained.returncode == 0, trained.stderr
    run_dir = runFolder(trained)
    record = json.loads(open(f"{run_dir}/args.json").read())
    with open(f"{run_dir}/args.json", "w") as handle:
        json.dump({**record, "algo": "dqn"}, handle)
    for command in (("replay.enjoy_baselines", "--log-dir", run_dir, "--num-timesteps", "10"),
                    ("rl_baselines.train", "--resume", run_dir),
                    ("environments.dataset_generator", "--policy", run_dir, "--save-path", tmp_path / "data",
                     "--num-episode", "1")):
        result = runModule(*command)
        error = result.stderr.strip().splitlines()[-1]
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert "algorithm 'dqn', which is not installed; valid choices: a2c, " in error, error
        assert "rl_zoo3" not in error, error
    assert algoChoicesText("dqn", typed=False).startswith("; valid choices: ")
