"""TrainConfig: validation builds the run's typed, frozen config once; algorithms get their own Namespace (plugin API
v1), so what they write there changes neither the run's config nor args.json."""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest
from conftest import REPO, runModule, trainArgs, trainHere

from replay import enjoy_baselines
from rl_baselines import api
from rl_baselines.core.registry import registered_rl
from rl_baselines.core.run_folder import RunFolder
from rl_baselines.envs.factory import VecEnvSettings, createEnvs, envKwargsFromArgs, makeSingleEnv
from rl_baselines.rl_algorithm.random_agent import RandomAgentModel
from rl_baselines.runs import train, train_checks
from rl_baselines.runs.resume import RESUME_FLAGS
from rl_baselines.runs.train_config import TrainConfig, checkedValue, upgradeArgsRecord
from rl_baselines.sweeps.recorded import changedSettings, otherSettings, specSettings
from rl_baselines.sweeps.sweep import makeSpec
from srl_models.prepare import trainCommand
from srl_toolbox.cli import UsageError

ENV = "MobileRobotGymEnv-v0"


def _parse(argv: list[str]) -> TrainConfig:
    args, plan, _ = train.parseCommand(argv)
    assert plan is None
    return args


def test_every_flag_of_the_shared_parser_has_a_typed_field() -> None:
    dests = {action.dest for action in train_checks.baseParser()._actions if action.dest not in ("help", "version")}
    assert dests == set(TrainConfig.flagFields())
    # a default that a word stands for is shown as the word (0 is --torch-threads auto's number)
    threads = next(action for action in train_checks.baseParser()._actions if action.dest == "torch_threads")
    assert threads.help.endswith("recorded [auto]") and "[0]" not in threads.help


def test_validate_builds_a_frozen_config_and_leaves_the_arguments_alone(tmp_path) -> None:
    args = _parse(["--algo", "ppo2", "--env", ENV, "--srl-model", "ground_truth", "--log-dir", str(tmp_path),
                   "--device", "auto", "--hyperparam", "n_steps:64", "gamma:0.95", "--n-epochs", "3", "--no-vis"])
    before = dict(vars(args))
    config = train_checks.validate(args, registered_rl)
    assert vars(args) == before  # the caller's Namespace is not where validation writes
    assert config.device == "cpu" and args.device == "auto"
    assert dict(config.hyperparams) == {"n_steps": 64, "gamma": 0.95}
    assert config.hp_n_epochs == 3 and config.extra["hp_n_epochs"] == 3  # the algorithm's own flag
    assert config.hyperparam == ("n_steps:64", "gamma:0.95")
    assert config.env_kwargs["srl_model"] == "ground_truth"
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.seed = 3
    with pytest.raises(TypeError):
        config.hyperparams["gamma"] = 0.5
    with pytest.raises(TypeError):
        config.extra["hp_n_epochs"] = 1
    with pytest.raises(AttributeError):
        _ = config.no_such_setting
    assert getattr(config, "no_such_setting", "default") == "default"
    assert not os.listdir(tmp_path)  # validation writes nothing


def test_a_second_camera_on_a_state_is_one_warning(tmp_path) -> None:
    # --fpv with ground truth changed nothing and said nothing (a sweep's pixel cells use it, so it is not refused)
    base = ["--algo", "ppo2", "--env", "MobileRobot1DGymEnv-v0", "--log-dir", str(tmp_path), "--fpv", "--no-vis"]
    with pytest.warns(UserWarning, match="--fpv stacks a second camera's image; it does nothing"):
        train_checks.validate(_parse([*base, "--srl-model", "ground_truth"]), registered_rl)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config = train_checks.validate(_parse([*base, "--srl-model", "raw_pixels"]), registered_rl)
    assert config.env_kwargs["fpv"] and not os.listdir(tmp_path)


@pytest.mark.parametrize("env_id, srl_model", [("OmnirobotEnv-v0", "ground_truth"),
                                               ("KukaButtonGymEnv-v0", "joints")])
def test_an_image_shape_on_a_state_is_one_warning(tmp_path, env_id, srl_model) -> None:
    # --img-shape with a state observation drew nothing at that size and said nothing (a sweep's pixel cells use it)
    base = ["--algo", "ppo2", "--env", env_id, "--log-dir", str(tmp_path), "--img-shape", "3", "40", "40", "--no-vis"]
    with pytest.warns(UserWarning, match=r"^--img-shape 3 40 40 sizes camera images; it does nothing") as records:
        train_checks.validate(_parse([*base, "--srl-model", srl_model]), registered_rl)
    assert len([record for record in records if "--img-shape" in str(record.message)]) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config = train_checks.validate(_parse([*base, "--srl-model", "raw_pixels"]), registered_rl)
    assert config.env_kwargs["img_shape"] == (3, 40, 40) and not os.listdir(tmp_path)


def test_flags_an_env_does_nothing_with_are_one_warning_and_left_out(tmp_path) -> None:
    # CarRacing took -r and --shape-reward and did nothing with them (every episode is a new track, the reward the
    # tiles'): one warning, and the env does not get them (a sweep passes them to every env; earlier runs have them)
    base = ["--algo", "ppo2", "--env", "CarRacingGymEnv-v0", "--srl-model", "ground_truth", "--log-dir", str(tmp_path)]
    for flag in ("-r", "--shape-reward"):
        with pytest.warns(UserWarning, match="does nothing on CarRacingGymEnv-v0, which does not offer it"):
            config = train_checks.validate(_parse([*base, flag, "--no-vis"]), registered_rl)
        assert not config.env_kwargs["random_target"] and not config.env_kwargs["shape_reward"]
        record = config.argsRecord()  # args.json: what the env applied
        assert not record["random_target"] and not record["shape_reward"]
        makeSingleEnv(config.env, dict(config.env_kwargs)).close()  # (the env itself refuses them)
    config = train_checks.validate(_parse(["--algo", "ppo2", "--env", ENV, "--srl-model", "ground_truth", "-r",
                                           "--shape-reward", "--log-dir", str(tmp_path), "--no-vis"]), registered_rl)
    assert config.env_kwargs["random_target"] and config.env_kwargs["shape_reward"]
    assert config.argsRecord()["random_target"] and config.argsRecord()["shape_reward"]
    assert not os.listdir(tmp_path)


def test_force_down_reaches_the_arm_and_older_runs_read_without_it(tmp_path) -> None:

    argv = ["--algo", "ppo2", "--env", "KukaButtonGymEnv-v0", "--srl-model", "ground_truth", "--log-dir",
            str(tmp_path), "--no-vis"]
    config = train_checks.validate(_parse([*argv, "--force-down"]), registered_rl)
    assert config.force_down and config.env_kwargs["force_down"] is True and config.argsRecord()["force_down"]
    env = makeSingleEnv("KukaButtonGymEnv-v0", dict(config.env_kwargs))
    try:
        assert env.unwrapped.force_down  # discrete action 5 moves down
    finally:
        env.close()
    # the env's default: up allowed
    assert "force_down" not in train_checks.validate(_parse(argv), registered_rl).env_kwargs
    older = {key: value for key, value in config.argsRecord().items() if key not in ("force_down", "args_format")}
    assert "force_down" not in envKwargsFromArgs(argparse.Namespace(**upgradeArgsRecord(older)))  # a run before it


def test_namespace_is_a_fresh_copy_and_replace_makes_a_new_config(tmp_path) -> None:
    config = train_checks.validate(_parse(["--algo", "ppo2", "--env", ENV, "--srl-model", "raw_pixels", "--img-shape",
                                           "3", "48", "48", "--log-dir", str(tmp_path), "--no-vis"]), registered_rl)
    first = config.namespace()
    first.seed, first.num_cpu, first.img_shape[1] = 99, 2, 7
    second = config.namespace()
    assert (second.seed, second.num_cpu, second.img_shape) == (0, 4, [3, 48, 48]) and second is not first
    assert config.img_shape == (3, 48, 48)
    moved = config.replace(run_dir=str(tmp_path / "run"), hp_n_steps=32)
    assert moved.run_dir == str(tmp_path / "run") and moved.hp_n_steps == 32
    assert config.run_dir is None and config.hp_n_steps is None
    assert moved.namespace().run_dir == str(tmp_path / "run") and config.namespace().run_dir is None


def test_args_record_drops_unset_algorithm_flags(tmp_path) -> None:
    config = train_checks.validate(_parse(["--algo", "ppo2", "--env", ENV, "--srl-model", "ground_truth", "--n-steps",
                                           "64", "--log-dir", str(tmp_path), "--no-vis"]), registered_rl)
    record = config.argsRecord()
    assert record["hp_n_steps"] == 64 and "hp_n_epochs" not in record
    assert set(TrainConfig.flagFields()) <= set(record) and "hyperparams" not in record and "run_dir" not in record
    assert list(record) == sorted(record)
    json.dumps(record)  # plain JSON


class MutatingAgent(RandomAgentModel):
    """A v1 algorithm that writes into its arguments, as plugins written against the Namespace contract may."""

    seen: list[argparse.Namespace] = []

    def train(self, args, callback, env_kwargs=None, train_kwargs=None):
        MutatingAgent.seen.append(args)
        super().train(args, callback, env_kwargs, train_kwargs)
        args.seed, args.num_timesteps, args.env = 12345, 1, "Changed-v0"
        args.run_dir = args.monitor_dir = None


def test_an_algorithm_writing_into_its_arguments_changes_nothing_of_the_run(tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(registered_rl, "mutating", (MutatingAgent, *registered_rl["random_agent"][1:]))
    result = train.trainCommand(["--algo", "mutating", "--env", ENV, "--srl-model", "ground_truth", "--num-timesteps",
                                 "300", "--eval-freq", "150", "--eval-episodes", "1", "--log-dir", str(tmp_path),
                                 "--seed", "3", "--no-vis", "--no-progress"])
    assert result.exit_code == 0
    given = MutatingAgent.seen[-1]
    assert isinstance(given, argparse.Namespace) and given.seed == 12345  # the algorithm's own copy
    assert isinstance(result.args, TrainConfig)
    assert (result.args.seed, result.args.env, result.args.num_timesteps) == (3, ENV, 300)
    assert result.args.run_dir == result.run_dir
    with open(os.path.join(result.run_dir, "args.json"), encoding="utf-8") as handle:
        saved = json.load(handle)
    assert (saved["seed"], saved["env"], saved["num_timesteps"]) == (3, ENV, 300)
    assert os.path.isfile(os.path.join(result.run_dir, "evaluations.npz"))  # the evaluation env read the run's own


def test_the_parser_is_generated_from_the_fields() -> None:
    parser = train_checks.baseParser()
    args = parser.parse_args([])
    for field in dataclasses.fields(TrainConfig):
        if field.name in TrainConfig.flagFields():
            default = vars(args)[field.name]
            assert (tuple(default) if isinstance(default, list) else default) == field.default, field.name
    text = parser.format_help()
    assert "env steps to train [1000000]" in text and "-c, --continuous-actions" in text
    assert "--run-folder" not in text  # hidden: set by the pipeline


def test_img_shape_help_and_readme_name_the_learned_model_default() -> None:
    """Left out, --img-shape is 3 64 64, or the learned SRL model's shape (--srl-model-path, a registered model)."""
    (action,) = [action for action in train_checks.baseParser()._actions if action.dest == "img_shape"]
    assert "[3 64 64, or the learned SRL model's own]" in action.help and "16..4096" in action.help
    assert ">= 36 with raw_pixels" in action.help  # the CNN policy's smallest side, refused below it
    with open(os.path.join(os.path.dirname(__file__), "..", "README.md")) as file:
        (row,) = [line for line in file if line.startswith("| `--img-shape C H W` |")
                  and "camera observation" in line]
    assert "`3 64 64`, or the learned SRL model's shape" in row and ">= 36 with `raw_pixels`" in row


def _readmeTrainFlagTable() -> list[tuple[list[str], str]]:
    """:return: the rows of README's train flag table, as (the flags of the row's first column, its default cell)"""
    with open(os.path.join(REPO, "README.md")) as file:
        lines = file.read().split("## Training an agent", 1)[1].splitlines()
    start = lines.index("| flag | default | meaning |") + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("| "):
            break
        names, default = line.split(" | ")[:2]
        flags = [item.split()[0] for item in re.findall(r"`([^`]+)`", names) if item.startswith("-")]
        rows.append((flags, default.strip()))
    return rows


def test_readme_train_flag_table_lists_every_flag_with_its_default() -> None:
    """README's train flag table left out --pretrain-dataset, --pretrain-epochs and --pretrain-lr, which --help
    lists: every visible flag of the shared parser has a row, and a row's plain defaults are the parser's."""
    rows = _readmeTrainFlagTable()
    listed = {flag for flags, _ in rows for flag in flags}
    actions = {flag: action for action in train_checks.baseParser()._actions if action.help != argparse.SUPPRESS
               for flag in action.option_strings if flag not in ("-h", "--help")}
    missing = sorted({actions[flag].option_strings[-1] for flag in actions if not set(actions[flag].option_strings)
                      & listed})
    assert not missing, f"train flags without a row in README's table: {missing}"

    def plain(cell: str) -> object:
        cell = cell.strip().strip("`")
        words = {"off": False, "none": None}
        if cell in words:
            return words[cell]
        try:
            return float(cell)
        except ValueError:
            return cell

    def parsed(value: object) -> object:
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, (int, float)):
            return float(value)
        return None if value == "none" else value

    compared = 0
    for flags, default in rows:
        cells = default.split(", ")
        if len(cells) != len(flags) or any(" " in cell.strip("`") for cell in cells):
            continue  # a default told in words, or one cell for several flags
        for flag, cell in zip(flags, cells):
            if cell and flag in actions and actions[flag].default is not None:
                assert plain(cell) == parsed(actions[flag].default), f"{flag}: README {cell}, parser " \
                                                                     f"{actions[flag].default!r}"
                compared += 1
    assert compared >= 20  # the table's plain defaults are checked, not skipped


def test_readme_resume_example_names_every_flag_resume_takes() -> None:
    """README's --resume example listed the flags that may go with it but --no-progress, which resume takes."""
    with open(os.path.join(REPO, "README.md")) as file:
        (line,) = [line for line in file if line.startswith("python -m rl_baselines.train --resume ")]
    named = re.findall(r"\[(--[a-z-]+)", line.split("#", 1)[1])
    assert sorted(named) == sorted(RESUME_FLAGS)


def test_the_docs_examples_write_under_folders_git_ignores() -> None:
    """README's examples, run from the repository root, left tb/, plots/, replay.gif and early.gif untracked there:
    every output path an example of README or docs/ gives (--video, --output-dir, -o, --tensorboard-log...) is under
    a root folder .gitignore ignores (logs/, data/), a placeholder (<run>, $VAR, CAPITALS), /tmp, or docs/images/."""
    with open(os.path.join(REPO, ".gitignore")) as file:
        ignored = [line.strip()[1:] for line in file if re.fullmatch(r"/[\w.-]+/", line.strip())]
    flags = r"(?:--video|--output-dir|--output|-o|--tensorboard-log|--logdir|--log-dir|--save-path|--log-folder)"
    outside = []
    for name in ["README.md", *sorted(os.listdir(os.path.join(REPO, "docs")))]:
        if not name.endswith(".md"):
            continue
        with open(os.path.join(REPO, name if name == "README.md" else os.path.join("docs", name))) as file:
            blocks = file.read().split("\n```")[1::2]  # (the code blocks: between a fence and the next)
        for line in "\n".join(blocks).replace("\\\n", " ").splitlines():
            for value in re.findall(rf"(?:^|\s)\[?{flags}[ =]([^\s\]]+)", line):
                if not (value.split("/")[0] + "/" in ignored or re.match(r"<|\$|[A-Z_]+$|/tmp/|docs/images/", value)):
                    outside.append(f"{name}: {value}")
    assert ignored and not outside, outside


def test_readme_sweep_on_a_prepared_kuka_model_has_the_flags_prepare_prints() -> None:
    """README's old-toolbox sweep on the Kuka vae of `srl_models.prepare --env KukaButtonGymEnv-v0 -r` had no
    --force-down, so its vae runs warned that the model's dataset was recorded with it: the example carries the
    env flags of the train command prepare prints for that model."""
    with open(os.path.join(REPO, "README.md")) as file:
        text = file.read().replace("\\\n", " ")
    (line,) = [line for line in text.splitlines() if line.startswith("python -m rl_baselines.pipeline ")
               and "srl_models.prepare --env KukaButtonGymEnv-v0 -r --srl-model vae" in line]
    command = line.split("#", 1)[0].split()
    printed = trainCommand("KukaButtonGymEnv-v0", "vae", random_target=True, config_file=None).split()
    assert [flag for flag in printed[printed.index("vae") + 1:] if flag not in command] == []


def test_the_smallest_raw_pixel_image_is_the_algorithms_own(tmp_path) -> None:
    """--img-shape below 36 with raw_pixels was refused for every algorithm ("the CNN policy needs H, W >= 36"),
    also those without a CNN (random_agent, a plugin): each declares its MIN_IMAGE_SIDE, 0 by default."""
    argv = ["--env", "MobileRobotGymEnv-v0", "--srl-model", "raw_pixels", "--img-shape", "3", "16", "16",
            "--log-dir", str(tmp_path / "logs")]
    assert RandomAgentModel.MIN_IMAGE_SIDE == 0 and registered_rl["ppo2"][0].MIN_IMAGE_SIDE == 36
    config = train_checks.validate(train.parseCommand(["--algo", "random_agent", *argv])[0], registered_rl)
    assert config.img_shape == (3, 16, 16)
    with pytest.raises(UsageError, match=r"--img-shape 3 16 16: the CNN policy of --algo ppo2 needs H, W >= 36"):
        train_checks.validate(train.parseCommand(["--algo", "ppo2", *argv])[0], registered_rl)
    assert not (tmp_path / "logs").exists()


def test_srl_model_path_help_names_every_kind_of_model_folder() -> None:
    # it said "(written by srl_models.train)", though a plugin model's folder from its own command works as well
    (action,) = [action for action in train_checks.baseParser()._actions if action.dest == "srl_model_path"]
    assert "srl_models.train's or prepare's, or a plugin model's from its own command" in action.help
    assert "written by srl_models.train)" not in action.help


def test_a_config_built_in_python_validates_like_the_command_line(tmp_path) -> None:

    given = TrainConfig(algo="sac", env=ENV, srl_model="ground_truth", continuous_actions=True, seed=4,
                        log_dir=str(tmp_path), num_timesteps=500, img_shape=(3, 48, 48), hyperparam=("gamma:0.9",))
    config = train_checks.validate(given, registered_rl)
    assert config.device == "cpu" and dict(config.hyperparams) == {"gamma": 0.9} and given.device == "auto"
    made = api.makeConfig(algo="sac", env=ENV, srl_model="ground_truth", continuous_actions=True, seed=4,
                          log_dir=tmp_path, num_timesteps=500, img_shape=[3, 48, 48], hyperparams={"gamma": 0.9},
                          learning_starts=50, vis=True, progress=True)
    parsed = train_checks.validate(_parse(list(made.argv)), registered_rl)  # the command line the API shows: same run
    assert parsed.argsRecord() == made.args.argsRecord()
    assert made.args.hp_learning_starts == 50 and "--learning-starts 50" in made.command
    assert config.argsRecord() == {key: value for key, value in made.args.argsRecord().items()
                                   if key not in ("hp_learning_starts", "no_vis", "no_progress")} | {
                                       "no_vis": False, "no_progress": False}
    assert not os.listdir(tmp_path)


def test_python_values_are_read_by_the_flags_parsers() -> None:

    assert checkedValue("num_timesteps", 1e3) == 1000 and checkedValue("seed", None) == 0
    assert checkedValue("img_shape", [3, 32, 32]) == (3, 32, 32)
    with pytest.raises(ValueError, match="argument --num-timesteps: '-5' must be a positive integer"):
        checkedValue("num_timesteps", -5)
    with pytest.raises(ValueError, match="switch"):
        checkedValue("shape_reward", "yes")
    with pytest.raises(ValueError, match="expected 3"):
        checkedValue("img_shape", [64, 64])


def test_env_building_takes_typed_settings() -> None:
    from_settings = createEnvs(VecEnvSettings("MobileRobotGymEnv-v0", 2, 3, "ground_truth", num_stack=2))
    from_args = createEnvs(trainArgs(env="MobileRobotGymEnv-v0", num_cpu=2, seed=3, srl_model="ground_truth",
                                     num_stack=2))
    try:
        np.testing.assert_array_equal(from_settings.reset(),
                                      from_args.reset())
        assert from_settings.observation_space.shape == (4,) and from_settings.num_envs == 2
    finally:
        from_settings.close()
        from_args.close()


class RefusingSaveAgent(RandomAgentModel):
    """A plugin whose save refuses its own state with a ValueError (not a disk error)."""

    def save(self, save_path: str, _locals=None) -> None:
        raise ValueError("cannot save a made-up state")


def test_a_final_save_that_raises_is_one_error_line_and_exit_1(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setitem(registered_rl, "refusing", (RefusingSaveAgent, *registered_rl["random_agent"][1:]))
    result = train.trainCommand(["--algo", "refusing", "--env", ENV, "--srl-model", "ground_truth", "--num-timesteps",
                                 "100", "--checkpoint-freq", "-1", "--log-dir", str(tmp_path), "--no-vis",
                                 "--no-progress"])
    assert result.exit_code == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert errors == [f"error: the model was not saved in {result.run_dir}: ValueError: cannot save a made-up state"]


# In a fresh interpreter (this process may have started its forkserver already): the env workers' parent, the
# forkserver, has the libraries mapped before it forks them.
PRELOAD_CHECK = """
from rl_baselines.envs.factory import VecEnvSettings, createEnvs
venv = createEnvs(VecEnvSettings("MobileRobotGymEnv-v0", 2, 0, "ground_truth", vec_env="subproc"))
worker = venv.processes[0].pid
forkserver = int(open(f"/proc/{worker}/stat").read().rsplit(")", 1)[1].split()[1])
print("libtorch" in open(f"/proc/{forkserver}/maps").read(), "pybullet" in open(f"/proc/{forkserver}/maps").read())
venv.close()
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads the processes' memory maps in /proc")
def test_env_workers_fork_from_a_server_that_imported_their_libraries() -> None:
    """createEnvs's workers do not each import torch, PyBullet and the envs again (seconds per env at a start)."""
    result = subprocess.run([sys.executable, "-c", PRELOAD_CHECK], capture_output=True, text=True, cwd=REPO,
                            timeout=300)
    assert result.stdout.split() == ["True", "True"], result.stdout + result.stderr


def test_flags_warned_to_do_nothing_are_recorded_as_applied(tmp_path) -> None:
    """--fpv/--multi-view, --img-shape and --srl-state-scale on a state observation and --force-down with joint
    actions: train warned that each does nothing, yet args.json recorded them as given (--fpv true, --img-shape 3 32
    32, --srl-state-scale participation), so that a ``gather_results --group-by`` on them set the run apart from the
    same run without them. args.json records what was applied; a sweep cell given the flags still finds the run its
    own, and the run replays."""
    flags = ["--fpv", "--img-shape", "3", "32", "32", "--srl-state-scale", "participation", "--num-timesteps", "64",
             "--hyperparam", "n_steps:64"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = trainHere("--algo", "ppo2", "--env", ENV, "--srl-model", "ground_truth", *flags, "--log-dir", tmp_path)
    assert len([w for w in caught if "does nothing" in str(w.message)]) == 3
    args = json.load(open(RunFolder(run).args_file))
    assert (args["fpv"], args["img_shape"], args["srl_state_scale"]) == (False, None, "none")
    assert "fpv" not in json.load(open(RunFolder(run).env_globals_file))["env_kwargs"]
    assert changedSettings(makeSpec("ppo2", ENV, "ground_truth", 0, flags, str(tmp_path)), run) == []
    assert enjoy_baselines.main(["--log-dir", run, "--num-timesteps", "20", "--no-progress"]) == 0
    joints = ["--algo", "sac", "--env", "KukaButtonGymEnv-v0", "--srl-model", "ground_truth", "-c", "-joints",
              "--force-down", "--multi-view", "--log-dir", str(tmp_path / "kuka"), "--no-vis"]
    with pytest.warns(UserWarning, match="--force-down does nothing with joint actions"):
        record = train_checks.validate(_parse(joints), registered_rl).argsRecord()
    assert (record["force_down"], record["multi_view"]) == (False, False)


def test_features_extractor_on_a_state_is_recorded_as_applied(tmp_path) -> None:
    """--features-extractor small on a state observation (the pixel policy's CNN): train warned that it does nothing,
    yet args.json recorded it as given, so that a ``gather_results --group-by`` on it set the run apart from the same
    run without it. args.json records ppo2's default (medium), as that run does; a sweep cell given the flag finds the run its
    own (the run id of the run without the flag, its earlier id the one that counted the flag), and the run replays."""
    flags = ["--features-extractor", "small", "--num-timesteps", "64", "--hyperparam", "n_steps:64"]
    with pytest.warns(UserWarning, match="--features-extractor small chooses the pixel policy's CNN") as caught:
        run = trainHere("--algo", "ppo2", "--env", ENV, "--srl-model", "ground_truth", *flags, "--log-dir", tmp_path)
    assert len([w for w in caught if "does nothing" in str(w.message)]) == 1
    assert json.load(open(RunFolder(run).args_file))["features_extractor"] == "medium"
    spec = makeSpec("ppo2", ENV, "ground_truth", 0, flags, str(tmp_path))
    assert changedSettings(spec, run) == []
    # the run id counts it as applied, the same run's id without the flag; the id that counted it as given, under
    # which sweeps recorded their finished runs before, still finds them
    assert spec.run_id == makeSpec("ppo2", ENV, "ground_truth", 0, flags[2:], str(tmp_path)).run_id
    assert spec.earlier_id is not None and spec.earlier_id != spec.run_id
    assert enjoy_baselines.main(["--log-dir", run, "--num-timesteps", "20", "--no-progress"]) == 0
    pixels = ["--algo", "ppo2", "--env", ENV, "--srl-model", "raw_pixels", "--features-extractor", "small",
              "--log-dir", str(tmp_path / "pixels"), "--no-vis"]
    assert train_checks.validate(_parse(pixels), registered_rl).argsRecord()["features_extractor"] == "small"


@pytest.mark.parametrize("skipped", ["algo", "env"])
def test_help_prints_where_the_default_algorithm_or_env_was_skipped(skipped, monkeypatch, capsys) -> None:
    """A plugin of the default algorithm's (or env's) name, skipped (two entry points declared it), left train --help
    refusing with "unknown --algo 'ppo2' (the default --algo; skipped ...)": --help prints the help."""
    if skipped == "algo":
        monkeypatch.delitem(registered_rl, train.DEFAULT_ALGO)
    else:
        monkeypatch.delitem(train.registered_env, train.DEFAULT_ENV)
    with pytest.raises(SystemExit) as exit_info:
        train.parseCommand(["--help"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith("usage: python -m rl_baselines.train")
    with pytest.raises(UsageError, match=f"unknown --{skipped} '"):  # (a command that trains is still refused)
        train.parseCommand(["--num-timesteps", "10"])


def test_eval_episodes_without_evaluations_is_recorded_as_applied(tmp_path) -> None:
    """--eval-episodes 3 without --eval-freq: train warned that it does nothing, yet args.json recorded 3. It records
    the default, as the run without it does, and the sweeps' recorded settings read either record as the command's."""
    base = ["--algo", "ppo2", "--env", ENV, "--srl-model", "ground_truth", "--log-dir", str(tmp_path), "--no-vis"]
    with pytest.warns(UserWarning, match="--eval-episodes 3 does nothing without --eval-freq"):
        record = train_checks.validate(_parse([*base, "--eval-episodes", "3"]), registered_rl).argsRecord()
    assert record["eval_episodes"] == 5
    spec = makeSpec("ppo2", ENV, "ground_truth", 0, ["--eval-episodes", "3"], str(tmp_path))
    assert otherSettings(specSettings(spec), record) == []
    assert otherSettings(specSettings(spec), {**record, "eval_episodes": 3}) == []  # (recorded before)
    evaluated = train_checks.validate(_parse([*base, "--eval-episodes", "3", "--eval-freq", "100"]), registered_rl)
    assert evaluated.argsRecord()["eval_episodes"] == 3
    assert not os.listdir(tmp_path)


def test_buffer_save_freq_without_a_buffer_and_min_episodes_save_with_evaluations_warn(tmp_path) -> None:
    """--buffer-save-freq with an algorithm that keeps no replay buffer (a2c), and --min-episodes-save with
    --eval-freq (the evaluations then choose best/, BestModelCallback.saveIfBest never reads it), were taken without a
    word and recorded as given: one warning each, and args.json records the default, as the run without them does."""
    base = ["--env", ENV, "--srl-model", "ground_truth", "--log-dir", str(tmp_path), "--no-vis"]
    with pytest.warns(UserWarning) as caught:
        record = train_checks.validate(_parse(["--algo", "a2c", *base, "--buffer-save-freq", "100", "--eval-freq",
                                               "100", "--min-episodes-save", "3"]), registered_rl).argsRecord()
    messages = [str(w.message) for w in caught]
    assert "--buffer-save-freq 100 does nothing: --algo a2c keeps no replay buffer" in messages, messages
    assert ("--min-episodes-save 3 does nothing with --eval-freq 100: the evaluations choose the best model"
            in messages), messages
    assert (record["buffer_save_freq"], record["min_episodes_save"]) == (0, 100)
    with warnings.catch_warnings():  # where they apply: no warning, recorded as given
        warnings.simplefilter("error")
        record = train_checks.validate(_parse(["--algo", "sac", *base, "-c", "--buffer-save-freq", "100",
                                               "--min-episodes-save", "3"]), registered_rl).argsRecord()
    assert (record["buffer_save_freq"], record["min_episodes_save"]) == (100, 3)
    assert not registered_rl["ppo1"][0].keepsReplayBuffer() and registered_rl["deepq"][0].keepsReplayBuffer()
    assert not os.listdir(tmp_path)


def test_pretraining_settings_without_a_dataset_and_a_missing_unread_srl_config_file_warn(tmp_path) -> None:
    """--pretrain-epochs/--pretrain-lr without --pretrain-dataset, and an --srl-config-file that does not exist with
    an observation that reads none (a sweep passes its file to every run), were taken without a word: one warning
    each; the pretraining's settings are recorded at their defaults, as the run without them records them."""
    base = ["--algo", "ppo2", "--env", ENV, "--srl-model", "ground_truth", "--log-dir", str(tmp_path), "--no-vis"]
    missing = str(tmp_path / "nowhere.yaml")
    with pytest.warns(UserWarning) as caught:
        record = train_checks.validate(_parse([*base, "--pretrain-epochs", "5", "--pretrain-lr", "0.1",
                                               "--srl-config-file", missing]), registered_rl).argsRecord()
    messages = [str(w.message) for w in caught]
    assert messages == ["--pretrain-epochs 5 does nothing without --pretrain-dataset",
                        "--pretrain-lr 0.1 does nothing without --pretrain-dataset",
                        f"--srl-config-file {missing}: no such file; it is read only to find a learned --srl-model, "
                        f"not 'ground_truth'"], messages
    assert (record["pretrain_epochs"], record["pretrain_lr"]) == (10, 0.001)
    assert otherSettings(specSettings(makeSpec("ppo2", ENV, "ground_truth", 0, ["--pretrain-epochs", "5"],
                                               str(tmp_path))), record) == []
    existing = tmp_path / "srl_models.yaml"
    existing.write_text("{}\n")
    with warnings.catch_warnings():  # a file that is there, not read by this observation: a sweep's, no warning
        warnings.simplefilter("error")
        train_checks.validate(_parse([*base, "--srl-config-file", str(existing)]), registered_rl)
    assert os.listdir(tmp_path) == ["srl_models.yaml"]


@pytest.mark.parametrize("refused", [["--algo", "gail"],  # (no --gail-dataset)
                                     ["--algo", "a2c", "--augment", "shift"],
                                     ["--algo", "a2c", "--log-dir", "/proc/no-such-folder"]])
def test_a_refused_command_prints_its_error_alone_not_the_warnings_of_flags_it_takes(tmp_path, refused) -> None:
    """A refusal found after flags that do nothing (--features-extractor, --fpv, --eval-episodes on a state: each a
    warning) printed those warnings first: a refused command prints its one-line error alone; the command accepted
    shows them, before its run folder."""
    idle = ["--srl-model", "ground_truth", "--features-extractor", "small", "--fpv", "--eval-episodes", "3"]
    base = ["--env", ENV, "--renderer", "sprites", "--no-vis", "--no-progress", "--num-timesteps", "64", *idle]
    result = runModule("rl_baselines.train", *base, "--log-dir", tmp_path, *refused)
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: "), result.stderr
    assert not os.listdir(tmp_path)
    if refused[1] != "a2c":
        return
    result = runModule("rl_baselines.train", *base, "--log-dir", tmp_path, "--algo", "a2c")
    assert result.returncode == 0, result.stderr
    shown = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert [line.split()[1] for line in shown] == ["--fpv", "--eval-episodes", "--features-extractor"], shown
