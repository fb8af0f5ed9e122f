"""Folders that change under a command: a run folder deleted or moved while it trains stops the run in one line
(exit 1) instead of being made again with part of a run, and so does an SRL model folder while srl_models.train
writes it; ``--resume`` removes the temporary files a killed save left, and only those."""
from __future__ import annotations

import glob
import os
import shutil

import pytest
from conftest import interruptedRun
from test_srl_models import tinyDataset  # noqa: F401  (the session fixture: one tiny dataset)

from rl_baselines.core.checkpointing import listCheckpoints
from rl_baselines.runs import train
from rl_baselines.runs.checkpoint_callbacks import CheckpointCallback
from srl_models import train as srl_train
from srl_toolbox import files
from srl_toolbox.cli import runCommand

RUN_ARGS = ["--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth", "--algo", "ppo2", "--num-timesteps",
            "500", "--checkpoint-freq", "250", "--hyperparam", "n_steps:125", "batch_size:25", "n_epochs:1",
            "--num-cpu", "1"]  # (a checkpoint at 250)


def _runFolders(log_dir: str) -> list[str]:
    return glob.glob(os.path.join(log_dir, "*", "*", "*", "*"))


@pytest.mark.parametrize("how", ["deleted", "moved"])
def test_a_run_folder_gone_while_training_stops_the_run_without_making_it_again(tmp_path, monkeypatch, capsys, how):
    log_dir, moved_to = str(tmp_path / "logs"), str(tmp_path / "moved")
    original, gone = CheckpointCallback.save, []

    def saveThenVanish(self, num_timesteps, training_state=True, **extra):
        folder = original(self, num_timesteps, training_state, **extra)
        if folder is not None and not gone:  # after the first checkpoint: rm -rf or mv of the run folder
            run_dir = self.saver.run_dir
            shutil.rmtree(run_dir) if how == "deleted" else os.rename(run_dir, moved_to)
            gone.append(run_dir)
        return folder

    monkeypatch.setattr(CheckpointCallback, "save", saveThenVanish)
    with pytest.raises(SystemExit) as exit_info:
        runCommand(train.main, ["--no-vis", "--no-progress", "--log-dir", log_dir, *RUN_ARGS])
    assert exit_info.value.code == 1
    stderr = capsys.readouterr().err
    (run_dir,) = gone
    assert stderr.strip().splitlines()[-1] == (f"error: the run folder {run_dir} disappeared while training (deleted "
                                               "or moved?): nothing more is saved")
    assert "Traceback" not in stderr
    assert not os.path.exists(run_dir) and _runFolders(log_dir) == []  # not made again, even partly
    if how == "moved":  # the moved folder keeps what was saved before the move, and nothing after it
        assert [steps for steps, _ in listCheckpoints(moved_to)] == [250]
        assert os.path.isfile(os.path.join(moved_to, "args.json"))


def test_resume_removes_the_temporary_files_of_a_killed_save_and_nothing_else(tmp_path, monkeypatch):
    run_dir = interruptedRun(monkeypatch, str(tmp_path / "logs"), RUN_ARGS, at_step=300)
    os.makedirs(os.path.join(run_dir, "best"), exist_ok=True)
    # what a kill -9 during a save leaves: the temporary file atomicPath made, beside its final name
    stale = [files._createTemporary(run_dir, "ppo2_model.zip"), files._createTemporary(run_dir, "evaluations.npz"),
             files._createTemporary(os.path.join(run_dir, "best"), "ppo2_model.zip")]
    # names that only look alike: the user's, kept
    kept = [os.path.join(run_dir, name) for name in (
        ".ppo2_model.zip", "ppo2_model.1234abcd.tmp.zip", ".ppo2_model.1234ABCD.tmp.zip", ".ppo2_model.123abcd.tmp.zip",
        ".ppo2_model.1234abcd.tmp.zip.bak", "notes.tmp", ".notes.txt")]
    for path in kept:
        with open(path, "w") as handle:
            handle.write("mine")
    assert all(os.path.isfile(path) for path in stale)
    assert train.main(["--resume", run_dir, "--no-vis", "--no-progress"]) == 0
    assert not [path for path in stale if os.path.exists(path)]
    assert all(open(path).read() == "mine" for path in kept)


def test_temporary_names_are_exactly_those_atomic_path_makes(tmp_path):
    names = ["ppo2_model.zip", "args.json", "noext", ".hidden", "a.b.tar", "reconstructions.png"]
    made = [files._createTemporary(str(tmp_path), name) for name in names]
    assert all(files.TEMPORARY_NAME.match(os.path.basename(path)) for path in made)
    damaged = tmp_path / "damaged_checkpoints"
    damaged.mkdir()
    evidence = files._createTemporary(str(damaged), "run_state.json")
    assert files.removeTemporaries(str(tmp_path), skip=("damaged_checkpoints",)) == sorted(made)
    assert os.listdir(tmp_path) == ["damaged_checkpoints"] and os.path.isfile(evidence)


@pytest.mark.parametrize("how", ["deleted", "moved"])
def test_a_model_folder_gone_while_srl_training_writes_it_stops_without_making_it_again(
        tinyDataset: str, tmp_path, monkeypatch, capsys, how) -> None:  # noqa: F811
    logs, moved_to, gone = tmp_path / "logs", str(tmp_path / "moved"), []
    original = srl_train.trainingCurve

    def curveThenVanish(history, path, *args, **kwargs):
        original(history, path, *args, **kwargs)
        folder = os.path.dirname(path)
        shutil.rmtree(folder) if how == "deleted" else os.rename(folder, moved_to)
        gone.append(folder)

    monkeypatch.setattr(srl_train, "trainingCurve", curveThenVanish)
    with pytest.raises(SystemExit) as exit_info:
        runCommand(srl_train.main, ["--data-folder", tinyDataset, "--srl-model", "autoencoder", "--state-dim", "4",
                                    "--epochs", "1", "--batch-size", "64", "--log-folder", str(logs), "--no-progress"])
    assert exit_info.value.code == 1
    (folder,) = gone
    stderr = capsys.readouterr().err
    assert stderr.strip().splitlines() == [f"error: the model folder {folder} disappeared while being written "
                                           "(deleted or moved?): nothing more is saved"]
    assert not os.path.exists(folder)
    if how == "moved":
        assert sorted(os.listdir(moved_to)) == ["exp_config.json", "srl_model.pt", "training_curve.png"]
