"""Self-healing resume: a newest checkpoint that fails its checksum is skipped for the newest intact one.

A finished sac run (ground truth, a 1000-transition buffer, checkpoints at 250 and 500 steps, each with its replay
buffer; 250-step episodes, so the checkpoints fall on episode ends) is put back as if killed after its checkpoint at
500 steps (the run's manifest and the final checkpoint removed). Then, in turn, the 500-step checkpoint's model file,
its normalisation statistics and its replay buffer are cut to half, and ``train --resume`` must: say so in one
warning line naming the damaged file and the checkpoint it falls back to, restore every part from the 250-step
checkpoint (the model's step count, the statistics and the buffer as saved there: checked on the algorithm right after
the restore), move the damaged checkpoint to ``damaged_checkpoints/`` untouched, write its own 500-step checkpoint
under the freed name, and finish at --num-timesteps with continuous monitor rows.
"""
from __future__ import annotations

import csv
import glob
import json
import os
import shutil

import numpy as np
import pytest
from conftest import runModule

from rl_baselines.core import base
from rl_baselines.core.checkpointing import listCheckpoints, readManifest, verifyCheckpoint
from rl_baselines.core.training_state import BUFFER_ARRAYS_FILE, BUFFER_VALUES_FILE
from rl_baselines.envs.factory import NORMALISATION_FILE, findVecNormalize
from rl_baselines.runs import train
from rl_baselines.runs.resume import runStatus
from srl_toolbox.cli import UsageError

GT = ["--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth"]
STEPS, INTERVAL = 750, 250
# train_freq 5: rollouts end on multiples of 5 steps, so the checkpoints fall at 250 and 500 (episode ends)
SAC = [*GT, "--algo", "sac", "-c", "--num-timesteps", str(STEPS), "--checkpoint-freq", str(INTERVAL),
       "--hyperparam", "learning_starts:100", "batch_size:32", "train_freq:5", "buffer_size:1000"]
DAMAGED = {"model": "sac_model.zip", "normalisation": NORMALISATION_FILE,
           "replay buffer": os.path.join("replay_buffer", BUFFER_ARRAYS_FILE)}


@pytest.fixture(scope="module")
def sacRun(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A finished 750-step sac run; its checkpoints at 250 and 500 steps both keep their replay buffers."""
    log_dir = str(tmp_path_factory.mktemp("sac"))
    assert train.main(["--no-vis", "--no-progress", *SAC, "--log-dir", log_dir]) == 0
    run_dir = glob.glob(os.path.join(log_dir, "MobileRobotGymEnv-v0", "*", "*", "*"))[0]
    assert [steps for steps, _ in listCheckpoints(run_dir)] == [250, 500, 750]
    return run_dir


def _killedAfter500(sac_run: str, run_dir: str) -> None:
    """Copy the run as a kill after its 500-step checkpoint would leave it: no final manifest nor final checkpoint."""
    shutil.copytree(sac_run, run_dir)
    os.remove(os.path.join(run_dir, "manifest.json"))
    shutil.rmtree(os.path.join(run_dir, "checkpoints", f"{STEPS}_steps"))


def _cut(path: str) -> int:
    with open(path, "r+b") as handle:
        handle.truncate(os.path.getsize(path) // 2)
    return os.path.getsize(path)


def _monitorRows(run_dir: str) -> tuple[bytes, list[dict[str, str]]]:
    data = open(os.path.join(run_dir, "monitor", "0.monitor.csv"), "rb").read()
    return data, list(csv.DictReader(data.decode().splitlines()[1:]))


@pytest.mark.slow
@pytest.mark.parametrize("part", list(DAMAGED))
def test_damaged_newest_checkpoint_falls_back_to_the_newest_intact_one(sacRun, tmp_path, monkeypatch, capsys, part):
    run_dir = str(tmp_path / "run")
    _killedAfter500(sacRun, run_dir)
    older, newest = (os.path.join(run_dir, "checkpoints", f"{steps}_steps") for steps in (250, 500))
    assert os.path.isdir(os.path.join(older, "replay_buffer"))  # the buffer before the newest one is kept
    damaged_file = os.path.join(newest, DAMAGED[part])
    cut_size = _cut(damaged_file)
    assert runStatus(run_dir) == "resume"

    restored = {}
    original = base.restoreRun

    def spy(algo, checkpoint):  # what the algorithm holds right after the restore
        original(algo, checkpoint)
        vec_normalize = findVecNormalize(algo.env)
        buffer = algo.model.replay_buffer
        restored.update(resume_from=checkpoint.folder, buffer_folder=checkpoint.buffer_folder,
                        num_timesteps=algo.model.num_timesteps,
                        obs_mean=vec_normalize.obs_rms.mean.copy(), obs_count=float(vec_normalize.obs_rms.count),
                        buffer_pos=int(buffer.pos), observations=buffer.observations[:buffer.pos].copy())

    monkeypatch.setattr(base, "restoreRun", spy)
    capsys.readouterr()
    assert train.main(["--resume", run_dir, "--no-vis", "--no-progress"]) == 0
    out, err = capsys.readouterr()

    # one line says which checkpoint and file failed, where it went, and which checkpoint the run resumed from
    lines = [line for line in err.splitlines() if "damaged" in line]
    assert len(lines) == 1, err
    moved = os.path.join(run_dir, "damaged_checkpoints", "500_steps")
    assert lines[0].startswith(f"warning: checkpoint {newest} is damaged ({DAMAGED[part]} ")
    assert "does not match its checksum" in lines[0] and f"moved to {moved}" in lines[0]
    assert lines[0].endswith(f"resuming from the newest intact one, {older} at 250 steps")
    assert f"Resuming from {older} (250 of {STEPS} steps)" in out and f"Done: {STEPS} steps" in out

    # every part came from the 250-step checkpoint
    assert restored["resume_from"] == older
    assert restored["num_timesteps"] == 250
    with np.load(os.path.join(older, NORMALISATION_FILE)) as statistics:
        np.testing.assert_array_equal(restored["obs_mean"], statistics["obs.mean"])
        assert restored["obs_count"] == float(statistics["obs.count"])
    assert restored["buffer_folder"] == os.path.join(older, "replay_buffer")
    saved_buffer = os.path.join(older, "replay_buffer")
    assert restored["buffer_pos"] == json.load(open(os.path.join(saved_buffer, BUFFER_VALUES_FILE)))["filled"] == 250
    with np.load(os.path.join(saved_buffer, BUFFER_ARRAYS_FILE)) as arrays:
        np.testing.assert_array_equal(restored["observations"], arrays["observations"])

    # the damaged checkpoint is kept aside as it was; the resumed run wrote its own under the freed name
    assert os.path.getsize(os.path.join(moved, DAMAGED[part])) == cut_size
    assert [steps for steps, _ in listCheckpoints(run_dir)] == [250, 500, STEPS]
    verifyCheckpoint(newest)
    manifest = readManifest(run_dir)
    assert manifest["finished"] and manifest["num_timesteps"] == STEPS

    # monitor rows: those before the 250-step checkpoint kept byte for byte, none lost, none twice
    state = json.load(open(os.path.join(older, "run_state.json")))
    data, rows = _monitorRows(run_dir)
    assert data[:state["monitor"]["0.monitor.csv"]] == _monitorRows(sacRun)[0][:state["monitor"]["0.monitor.csv"]]
    times = [float(row["t"]) for row in rows]
    assert all(later > earlier for earlier, later in zip(times, times[1:]))
    assert sum(int(row["l"]) for row in rows) == STEPS


@pytest.mark.slow
def test_a_checkpoint_whose_manifest_was_deleted_is_damaged(sacRun, tmp_path, capsys):
    # it was skipped silently and kept: the resumed run never wrote its own at that step, so the next kill fell back
    # further; with every manifest gone the run trained again from step 0
    run_dir = str(tmp_path / "run")
    _killedAfter500(sacRun, run_dir)
    older, newest = (os.path.join(run_dir, "checkpoints", f"{steps}_steps") for steps in (250, 500))
    os.remove(os.path.join(newest, "manifest.json"))
    capsys.readouterr()
    assert train.main(["--resume", run_dir, "--no-vis", "--no-progress"]) == 0
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if "damaged" in line]
    assert len(lines) == 1 and "manifest.json is missing" in lines[0], err
    assert f"Resuming from {older} (250 of {STEPS} steps)" in out
    assert os.path.isdir(os.path.join(run_dir, "damaged_checkpoints", "500_steps"))
    assert [steps for steps, _ in listCheckpoints(run_dir)] == [250, 500, STEPS]
    verifyCheckpoint(newest)


@pytest.mark.slow
def test_no_intact_checkpoint_is_refused_and_nothing_changes(sacRun, tmp_path):
    run_dir = str(tmp_path / "run")
    _killedAfter500(sacRun, run_dir)
    _cut(os.path.join(run_dir, "checkpoints", "500_steps", "sac_model.zip"))
    _cut(os.path.join(run_dir, "checkpoints", "250_steps", NORMALISATION_FILE))

    def snapshot() -> dict[str, int]:
        return {os.path.relpath(os.path.join(root, name), run_dir): os.path.getsize(os.path.join(root, name))
                for root, _, names in os.walk(run_dir) for name in names}

    before = snapshot()
    with pytest.raises(UsageError) as error:
        train.main(["--resume", run_dir, "--no-vis", "--no-progress"])
    message = str(error.value)
    assert "\n" not in message and "no intact checkpoint" in message
    assert os.path.join(run_dir, "checkpoints", "500_steps") in message and "so is the one before it" in message
    assert snapshot() == before and runStatus(run_dir) == "unusable"
    result = runModule("rl_baselines.train", "--resume", run_dir, "--no-vis", "--no-progress")
    assert result.returncode == 2 and result.stderr.strip().splitlines() == [f"error: {message}"]
    assert snapshot() == before
