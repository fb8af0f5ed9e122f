"""The command that continues a run's model in a new run folder (``continueCommand``, offered by a Ctrl-C before the
first checkpoint and by ``--resume`` of an algorithm without saveTrainingState) carries how the run trained and
what it wrote: its augmentation, evaluations, checkpoints, tag and where its envs stepped, given where the run set
them, and nothing for train's defaults."""
from __future__ import annotations

import shlex
import shutil

from rl_baselines.runs.resume import continueCommand
from rl_baselines.runs.train_config import TrainConfig
from srl_toolbox.cli import pythonCommand


def test_the_continue_command_keeps_the_runs_settings() -> None:
    args = TrainConfig(algo="ppo2", env="MobileRobotGymEnv-v0", srl_model="raw_pixels", num_cpu=2, vec_env="subproc",
                       augment="shift", eval_freq=500, eval_episodes=3, checkpoint_freq=1000, episode_window=10,
                       tag="long")
    words = shlex.split(continueCommand(args, "RUN/ppo2_model.zip", 4000))
    pairs = dict(zip(words[3::2], words[4::2], strict=False))
    assert {key: pairs.get(key) for key in ("--augment", "--vec-env", "--eval-freq", "--eval-episodes",
                                            "--checkpoint-freq", "--episode-window", "--tag", "--num-cpu")} == {
        "--augment": "shift", "--vec-env": "subproc", "--eval-freq": "500", "--eval-episodes": "3",
        "--checkpoint-freq": "1000", "--episode-window": "10", "--tag": "long", "--num-cpu": "2"}
    plain = continueCommand(TrainConfig(algo="ppo2", env="MobileRobotGymEnv-v0", vec_env="dummy", num_cpu=1), None,
                            64).split()
    for flag in ("--augment", "--vec-env", "--eval-freq", "--eval-episodes", "--checkpoint-freq", "--buffer-save-freq",
                 "--min-episodes-save", "--episode-window", "--tag"):
        assert flag not in plain  # train's defaults (one env: its envs always step in the training process)


def test_the_continue_command_names_the_running_interpreter(monkeypatch) -> None:
    # only printed (a Ctrl-C's last line, --resume's refusal): `make demo`'s .venv/bin/python, not a bare `python`
    monkeypatch.setattr(shutil, "which", lambda name, *args, **kwargs: None)  # no `python` on PATH
    interpreter = pythonCommand()
    assert interpreter != "python"
    command = continueCommand(TrainConfig(algo="ppo2", env="MobileRobotGymEnv-v0", num_cpu=4), "RUN/ppo2_model.zip", 64)
    assert command.startswith(f"{interpreter} -m rl_baselines.train --algo ppo2 ")
