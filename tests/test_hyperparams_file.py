"""hyperparams.yaml: every hyperparameter a run used, loadable by train --hyperparam-file; args.json without nulls of
unset algorithm flags."""
from __future__ import annotations

import csv
import json
import os
import re

import pytest
import torch
import yaml
from conftest import interruptThenResume, runModule, trainHere
from stable_baselines3 import PPO

from rl_baselines.core.algo_types import ActionType
from rl_baselines.core.hyperparams import plainValues
from rl_baselines.core.registry import registered_rl
from rl_baselines.rl_algorithm.ppo2 import PPO2Model
from rl_baselines.runs import train
from rl_baselines.runs.hyperparam_sources import parseHyperparamPairs, readHyperparamFile
from rl_baselines.runs.hyperparams_file import usedHyperparams
from rl_baselines.runs.monitor_files import loadEpisodes
from rl_baselines.runs.train_checks import algorithmParser
from rl_baselines.runs.train_config import TrainConfig
from srl_toolbox.cli import UsageError

GT = ["--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth"]


def _readYaml(run_dir: str) -> dict:
    with open(os.path.join(run_dir, "hyperparams.yaml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


@pytest.mark.parametrize("algo", sorted(registered_rl))
def test_every_algorithm_writes_values_it_reads_back(algo: str, tmp_path) -> None:
    algo_class, _, action_types = registered_rl[algo]
    flags = [*GT, "--algo", algo] + (["-c"] if ActionType.DISCRETE not in action_types else [])
    args = algorithmParser(algo_class).parse_args(flags)  # (--num-cpu at the algorithm's default, as train has it)
    used = usedHyperparams(algo_class, TrainConfig.fromValues(vars(args)), {})
    defaults = getattr(algo_class, "DEFAULT_HYPERPARAMS", {}) or {}
    assert set(defaults) <= set(used)
    # the file, as train --hyperparam-file reads it, gives the same values back
    path = tmp_path / "hyperparams.yaml"
    path.write_text(yaml.safe_dump(used))
    assert plainValues(algo_class.parserHyperParam(readHyperparamFile(str(path), "MobileRobotGymEnv-v0"))) == used


@pytest.mark.slow
def test_a_run_repeats_from_its_folder(tmp_path) -> None:
    flags = ["--algo", "ppo2", *GT, "--num-timesteps", "256", "--seed", "5"]
    # trained in this process: the runs' files, not the processes, are compared
    first = trainHere(*flags, "--n-steps", "64", "--hyperparam", "batch_size:32", "--log-dir", tmp_path / "first")
    used = _readYaml(first)

    assert set(used) == set(PPO2Model.DEFAULT_HYPERPARAMS)
    assert used["n_steps"] == 64 and used["batch_size"] == 32  # a flag and --hyperparam, typed
    assert used["learning_rate"] == PPO2Model.DEFAULT_HYPERPARAMS["learning_rate"]  # a default
    saved_args = json.load(open(os.path.join(first, "args.json")))
    # the flag given is kept; no null for every flag left unset
    assert {key: value for key, value in saved_args.items() if key.startswith("hp_")} == {"hp_n_steps": 64}
    # the same command with the folder's file only: the same hyperparameters and the same training
    second = trainHere(*flags, "--hyperparam-file", os.path.join(first, "hyperparams.yaml"), "--log-dir",
                       tmp_path / "second")
    assert _readYaml(second) == used
    # the algorithm's own flags win over the file (they lost silently, and args.json recorded the flag's value)
    third = trainHere(*flags, "--hyperparam-file", os.path.join(first, "hyperparams.yaml"), "--learning-rate", "0.001",
                      "--n-epochs", "2", "--num-timesteps", "64", "--log-dir", tmp_path / "third")
    assert _readYaml(third) == {**used, "learning_rate": 0.001, "n_epochs": 2}

    episodes = [loadEpisodes(os.path.join(run, "monitor")) for run in (first, second)]
    assert list(episodes[0]["rewards"]) == list(episodes[1]["rewards"])
    assert list(episodes[0]["lengths"]) == list(episodes[1]["lengths"])
    weights = [PPO.load(os.path.join(run, "ppo2_model.zip"), device="cpu").policy.state_dict() for run in (first, second)]
    assert all(torch.equal(weights[0][name], weights[1][name]) for name in weights[0])


@pytest.mark.slow
def test_a_resumed_and_a_replayed_run_read_the_new_args_json(tmp_path, capsys) -> None:
    run_dir = trainHere("--algo", "acer", *GT, "--num-timesteps", "128", "--log-dir", tmp_path)
    assert _readYaml(run_dir)["n_steps"] == registered_rl["acer"][0].DEFAULT_HYPERPARAMS["n_steps"]
    result = runModule("replay.enjoy_baselines", "--log-dir", run_dir, "--num-timesteps", "10")
    assert result.returncode == 0, result.stderr
    capsys.readouterr()
    assert train.main(["--resume", run_dir]) == 0  # in this process, as the run above
    assert "nothing to resume" in capsys.readouterr().out


def test_value_clipping_and_target_kl_reach_the_model_from_flags_and_from_an_rl_zoo_file(tmp_path) -> None:
    flags = ["--algo", "ppo2", *GT, "--num-timesteps", "128", "--n-steps", "64"]
    run = trainHere(*flags, "--clip-range-vf", "0.2", "--target-kl", "0.02", "--log-dir", tmp_path / "flags")
    model = PPO.load(os.path.join(run, "ppo2_model.zip"))
    assert model.clip_range_vf(1.0) == 0.2 and model.target_kl == 0.02
    # plain YAML values, as rl_zoo3's files hold them: a float, or null for off (ppo2's default target_kl)
    assert {key: _readYaml(run)[key] for key in ("clip_range_vf", "target_kl")} == {"clip_range_vf": 0.2,
                                                                                     "target_kl": 0.02}
    default_run = trainHere(*flags, "--clip-range-vf", "0.2", "--log-dir", tmp_path / "default")
    text = open(os.path.join(default_run, "hyperparams.yaml"), encoding="utf-8").read()
    assert "clip_range_vf: 0.2\n" in text and "target_kl: null\n" in text, text
    repeated = trainHere(*flags, "--hyperparam-file", os.path.join(default_run, "hyperparams.yaml"), "--log-dir",
                         tmp_path / "repeated")
    assert _readYaml(repeated) == _readYaml(default_run)
    model = PPO.load(os.path.join(repeated, "ppo2_model.zip"))
    assert model.clip_range_vf(1.0) == 0.2 and model.target_kl is None
    old_file = tmp_path / "old.yaml"  # as runs before wrote them: quoted numbers and the word none
    old_file.write_text("clip_range_vf: '0.2'\ntarget_kl: none\n")
    assert plainValues(PPO2Model.parserHyperParam(readHyperparamFile(str(old_file), "MobileRobotGymEnv-v0"))) == {
        "clip_range_vf": 0.2, "target_kl": None}
    zoo_file = tmp_path / "zoo.yml"  # as rl_zoo3 writes them: null for off, numbers otherwise
    zoo_file.write_text("clip_range_vf: null\ntarget_kl: 0.05\n")
    run = trainHere(*flags, "--hyperparam-file", zoo_file, "--log-dir", tmp_path / "file")
    model = PPO.load(os.path.join(run, "ppo2_model.zip"))
    assert model.clip_range_vf is None and model.target_kl == 0.05


def test_a_run_with_value_clipping_resumes_with_it(tmp_path, monkeypatch) -> None:
    run_args = ["--algo", "ppo2", *GT, "--num-timesteps", "512", "--n-steps", "64", "--checkpoint-freq", "128",
                "--clip-range-vf", "0.2", "--target-kl", "none"]
    run_dir = interruptThenResume(monkeypatch, str(tmp_path), run_args, 200)
    model = PPO.load(os.path.join(run_dir, "ppo2_model.zip"))
    assert model.num_timesteps == 512 and model.clip_range_vf(1.0) == 0.2 and model.target_kl is None


def test_a_run_with_value_clipping_stopped_before_its_first_checkpoint_starts_again_with_it(tmp_path,
                                                                                             monkeypatch) -> None:
    # args.json keeps --clip-range-vf as written (a str): the restart from step 0 builds a new model from it
    run_args = ["--algo", "ppo2", *GT, "--num-timesteps", "256", "--n-steps", "64", "--checkpoint-freq", "128",
                "--clip-range-vf", "0.2", "--num-cpu", "1"]
    run_dir = interruptThenResume(monkeypatch, str(tmp_path), run_args, 50)
    model = PPO.load(os.path.join(run_dir, "ppo2_model.zip"))
    assert model.num_timesteps == 256 and model.clip_range_vf(1.0) == 0.2


def test_an_rl_zoo_file_gives_the_runs_env_section_and_names_the_equivalents_of_its_other_keys(tmp_path) -> None:
    zoo_file = tmp_path / "ppo.yml"  # rl_zoo3's layout: one section per env id
    zoo_file.write_text("KukaButtonGymEnv-v0:\n  n_steps: 32\nMobileRobotGymEnv-v0:\n  n_steps: 64\n"
                        "  learning_rate: !!float 1e-3\n  clip_range_vf: null\n")
    assert readHyperparamFile(str(zoo_file), "MobileRobotGymEnv-v0") == {"n_steps": "64", "learning_rate": "0.001",
                                                                         "clip_range_vf": "none"}
    assert readHyperparamFile(str(zoo_file), "KukaButtonGymEnv-v0") == {"n_steps": "32"}
    with pytest.raises(UsageError, match="no section for MobileRobot1DGymEnv-v0 .it has: KukaButtonGymEnv-v0, Mobile"):
        readHyperparamFile(str(zoo_file), "MobileRobot1DGymEnv-v0")
    for content, words in [("n_envs: 4", "--num-cpu 4"), ("n_timesteps: !!float 2e5", "--num-timesteps 200000"),
                           ("policy: CnnPolicy", "the policy follows the observation"),
                           ("frame_stack: 4", "--num-stack 4"), ("normalize: true", "normalised"),
                           ("learning_rate: lin_2.5e-4", "learning_rate: 2.5e-4 and train's --lr-schedule linear"),
                           ("clip_range: lin_0.1", "a number (clip_range: 0.1)"),
                           ("policy_kwargs: dict(net_arch=[64])", "never does")]:
        flat = tmp_path / "flat.yml"
        flat.write_text(f"n_steps: 64\n{content}\n")
        with pytest.raises(UsageError, match=re.escape(words)):
            readHyperparamFile(str(flat), "MobileRobotGymEnv-v0")
    # a flat file with a mapping value is not read as sections
    (tmp_path / "nested.yml").write_text("n_steps: 64\nextra: {a: 1}\n")
    with pytest.raises(UsageError, match="'extra'.*is not NAME: number/string/bool"):
        readHyperparamFile(str(tmp_path / "nested.yml"), "MobileRobotGymEnv-v0")


def test_an_rl_zoo_entry_as_written_is_refused_once_naming_every_key_to_change(tmp_path) -> None:
    """rl_zoo3's ppo.yml entry for CartPole-v1, under the run's env: its settings and schedules are all named, with
    their equivalents, in one line (not one per attempt)."""
    zoo_file = tmp_path / "ppo.yml"
    zoo_file.write_text("MobileRobotGymEnv-v0:\n  n_envs: 8\n  n_timesteps: !!float 1e5\n  policy: 'MlpPolicy'\n"
                        "  n_steps: 32\n  batch_size: 256\n  gae_lambda: 0.8\n  learning_rate: lin_0.001\n"
                        "  clip_range: lin_0.2\n")
    with pytest.raises(UsageError) as refusal:
        readHyperparamFile(str(zoo_file), "MobileRobotGymEnv-v0")
    message = str(refusal.value)
    assert "\n" not in message and message.startswith(f"--hyperparam-file {str(zoo_file)!r}: n_envs is rl_zoo3's")
    for words in ["--num-cpu 8", "--num-timesteps 100000", "policy is rl_zoo3's",
                  "learning_rate: 0.001 and train's --lr-schedule linear", "a number (clip_range: 0.2)"]:
        assert message.count(words) == 1, words


def test_rl_zoo_train_freq_pairs_read_in_steps_and_per_episode_training_is_refused(tmp_path) -> None:
    """rl_zoo3's train_freq: [N, "step"] is SB3's int train_freq N; [N, "episode"] has no equivalent here, and is
    refused in one line naming train_freq: N, from the file and from --hyperparam alike."""
    zoo_file = tmp_path / "zoo.yml"
    zoo_file.write_text('MobileRobotGymEnv-v0:\n  train_freq: [4, "step"]\n  batch_size: 64\n')
    assert readHyperparamFile(str(zoo_file), "MobileRobotGymEnv-v0") == {"train_freq": "4", "batch_size": "64"}
    assert parseHyperparamPairs(["train_freq:[4,step]", "gamma:0.9"]) == {"train_freq": "4", "gamma": "0.9"}
    assert parseHyperparamPairs(["train_freq:(8, 'step')"]) == {"train_freq": "8"}
    flat = tmp_path / "z6.yml"
    for content, words in [('train_freq: [1, "episode"]', "train_freq: [1, 'episode'] trains every 1 episode"),
                           ('train_freq: [4, "steps"]', "UNIT one of step, episode"),
                           ('train_freq: [2.5, "step"]', "with an integer N")]:
        flat.write_text(f"{content}\n")
        with pytest.raises(UsageError, match=re.escape(words)) as refusal:
            readHyperparamFile(str(flat), "MobileRobotGymEnv-v0")
        assert "give train_freq: N" in str(refusal.value) and "\n" not in str(refusal.value)
    with pytest.raises(UsageError, match=re.escape("--hyperparam: train_freq: [1,episode] trains every 1 episode")):
        parseHyperparamPairs(["train_freq:[1,episode]"])
    # through the train command: exit 2, one line, no run folder; [N, "step"] trains with train_freq N
    flat.write_text('train_freq: [1, "episode"]\n')
    common = ["--algo", "deepq", *GT, "--num-timesteps", "100", "--hyperparam", "learning_starts:50", "--log-dir",
              str(tmp_path / "logs")]
    refused = runModule("rl_baselines.train", "--no-vis", *common, "--hyperparam-file", str(flat))
    assert refused.returncode == 2 and refused.stderr.strip().count("\n") == 0, refused.stderr
    assert "not offered here" in refused.stderr and not (tmp_path / "logs").exists()
    run_dir = trainHere(*common, "--hyperparam-file", str(zoo_file))
    assert _readYaml(run_dir)["train_freq"] == 4


def test_a_model_continued_under_lr_schedule_linear_decays_from_its_saved_rate(tmp_path) -> None:
    """A model trained at a constant rate, continued with --lr-schedule linear and no --learning-rate, decays
    linearly from its saved rate (the flag was ignored: the rate stayed constant)."""
    flags = ["--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth", "--n-steps", "32",
             "--batch-size", "32", "--n-epochs", "1", "--checkpoint-freq", "-1", "--num-cpu", "1"]  # an update per 32
    first = trainHere(*flags, "--learning-rate", "0.001", "--num-timesteps", "64", "--log-dir", tmp_path / "first")
    continued = trainHere(*flags, "--num-timesteps", "128", "--lr-schedule", "linear", "--log-dir", tmp_path / "next",
                          "--load-rl-model-path", os.path.join(first, "ppo2_model.zip"))
    model = PPO.load(os.path.join(continued, "ppo2_model.zip"))
    assert model.lr_schedule(1.0) == pytest.approx(0.001) and model.lr_schedule(0.5) == pytest.approx(0.0005)
    with open(os.path.join(continued, "progress.csv")) as file:
        rates = [float(row["train/learning_rate"]) for row in csv.DictReader(file) if row["train/learning_rate"]]
    assert len(rates) >= 3 and all(later < earlier for earlier, later in zip(rates, rates[1:])) and rates[0] <= 0.001


def test_a_model_saved_under_lr_schedule_linear_continues_it_and_its_records_say_so(tmp_path) -> None:
    """A model trained with --lr-schedule linear, continued with neither flag, kept decaying (SB3 restores its
    schedule) while args.json said constant and hyperparams.yaml ppo2's default rate, 0.0003."""
    flags = ["--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth", "--n-steps", "32",
             "--batch-size", "32", "--n-epochs", "1", "--checkpoint-freq", "-1", "--num-cpu", "1"]  # an update per 32
    first = trainHere(*flags, "--learning-rate", "0.001", "--lr-schedule", "linear", "--num-timesteps", "64",
                      "--log-dir", tmp_path / "first")
    continued = trainHere(*flags, "--num-timesteps", "128", "--log-dir", tmp_path / "next",
                          "--load-rl-model-path", os.path.join(first, "ppo2_model.zip"))
    with open(os.path.join(continued, "args.json")) as file:
        assert json.load(file)["lr_schedule"] == "linear"
    with open(os.path.join(continued, "hyperparams.yaml")) as file:
        assert yaml.safe_load(file)["learning_rate"] == pytest.approx(0.001)
    with open(os.path.join(continued, "progress.csv")) as file:
        rates = [float(row["train/learning_rate"]) for row in csv.DictReader(file) if row["train/learning_rate"]]
    assert len(rates) >= 3 and all(later < earlier for earlier, later in zip(rates, rates[1:])) and rates[0] <= 0.001


def test_rl_zoo_params_on_the_command_line_name_their_equivalents_as_the_file_does() -> None:
    """rl_zoo3's -params habits given to --hyperparam (a lin_ schedule, n_envs) are named with their equivalents, all
    in one line, as in a --hyperparam-file (they were 'needs a float value' and 'unknown hyperparameter')."""
    with pytest.raises(UsageError) as refusal:
        parseHyperparamPairs(["learning_rate:lin_0.001", "gamma:0.9", "n_envs:8"])
    assert str(refusal.value) == ("--hyperparam: learning_rate: lin_0.001 is rl_zoo3's linear schedule; give "
                                  "learning_rate: 0.001 and train's --lr-schedule linear; n_envs is rl_zoo3's, not a "
                                  "hyperparameter; give --num-cpu 8 (parallel envs)")
    assert parseHyperparamPairs(["learning_rate:0.001", "gamma:0.9"]) == {"learning_rate": "0.001", "gamma": "0.9"}


def test_a_continued_models_episode_means_are_its_own_episodes(tmp_path) -> None:
    """After --load-rl-model-path, progress.csv's rollout/ep_rew_mean mixed in the saved model's last episodes (SB3
    keeps them in the zip) where the run's own summary counts its own: its own only, as in rl_zoo3's continued runs."""
    flags = ["--algo", "ppo2", *GT, "--n-steps", "256", "--batch-size", "64", "--n-epochs", "1",
             "--checkpoint-freq", "-1", "--num-cpu", "1"]
    first = trainHere(*flags, "--num-timesteps", "768", "--seed", "1", "--log-dir", tmp_path / "first")
    continued = trainHere(*flags, "--num-timesteps", "768", "--seed", "2", "--log-dir", tmp_path / "next",
                          "--load-rl-model-path", os.path.join(first, "ppo2_model.zip"))
    with open(os.path.join(continued, "progress.csv")) as file:
        means = [float(row["rollout/ep_rew_mean"]) for row in csv.DictReader(file) if row["rollout/ep_rew_mean"]]
    own, saved = (loadEpisodes(os.path.join(run, "monitor"))["rewards"] for run in (continued, first))
    assert len(own) and len(saved) and means[-1] == pytest.approx(float(own.mean()))
