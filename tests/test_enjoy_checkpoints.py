"""Replaying a run's periodic checkpoint: ``enjoy_baselines --load-checkpoint N`` / ``--load-last-checkpoint`` and
``api.loadRun(run_dir, checkpoint=...)``.

One finished ppo2 run (ground truth, 500 steps, checkpoints at 250 and 500 steps, trained in this process) is shared.
A checkpoint plays its own model and its own normalisation statistics (not the run's latest); the newest intact
checkpoint is the newest one whose files match their checksums (a damaged newer one is skipped and left in place);
a step without a checkpoint, a damaged checkpoint and a checkpoint flag with ``--model`` are refused in one line
before anything is written.
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import re
import shutil
import time

import numpy as np
import pytest
import torch
from conftest import runModule, startModule, trainHere
from stable_baselines3 import PPO

from replay import enjoy_baselines
from rl_baselines import api
from rl_baselines.core.checkpointing import listCheckpoints
from rl_baselines.envs.factory import NORMALISATION_FILE, findVecNormalize
from rl_baselines.runs import train
from rl_baselines.runs.loaded_run import LoadedRun
from rl_baselines.runs.run_policy import RunPolicy
from srl_toolbox.cli import UsageError

GT = ["--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth"]
REPLAY = ["--num-timesteps", "10", "--no-progress", "--no-vis"]


@pytest.fixture(scope="module")
def checkpointedRun(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A finished ppo2 run of one env with checkpoints at 250 and 500 steps."""
    log_dir = str(tmp_path_factory.mktemp("checkpointed"))
    assert train.main(["--no-vis", "--no-progress", *GT, "--algo", "ppo2", "--num-timesteps", "500",
                       "--checkpoint-freq", "250", "--log-dir", log_dir, "--hyperparam", "n_steps:125",
                       "batch_size:25", "n_epochs:1", "--num-cpu", "1"]) == 0
    run_dir = glob.glob(os.path.join(log_dir, "MobileRobotGymEnv-v0", "*", "*", "*"))[0]
    assert [steps for steps, _ in listCheckpoints(run_dir)] == [250, 500]
    return run_dir


def _checkpoint(run_dir: str, steps: int) -> str:
    return os.path.join(run_dir, "checkpoints", f"{steps}_steps")


def _weights(model_path: str) -> dict[str, torch.Tensor]:
    return PPO.load(model_path, device="cpu").policy.state_dict()


def _sameWeights(first: dict[str, torch.Tensor], second: dict[str, torch.Tensor]) -> bool:
    return first.keys() == second.keys() and all(torch.equal(first[name], second[name]) for name in first)


def _assertPlays(run, run_dir: str, steps: int) -> None:
    """The loaded run is the checkpoint of ``steps``: its folder, model weights and normalisation statistics."""
    folder = _checkpoint(run_dir, steps)
    assert run.model_folder == folder and run.checkpoint_steps == steps
    weights = {name: tensor.cpu() for name, tensor in run.model.model.policy.state_dict().items()}
    assert _sameWeights(weights, _weights(os.path.join(folder, "ppo2_model.zip")))
    env = run.makeEnv()
    try:
        with np.load(os.path.join(folder, NORMALISATION_FILE)) as saved:
            np.testing.assert_array_equal(findVecNormalize(env).obs_rms.mean, saved["obs.mean"])
    finally:
        env.close()


def _replay(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> list:
    """Run enjoy_baselines in this process; :return: the LoadedRun it played (in a list, empty when none)"""
    loaded = []

    def spy(*args, **kwargs):
        loaded.append(enjoy_baselines.loadRun.__wrapped__(*args, **kwargs))
        return loaded[-1]

    spy.__wrapped__ = enjoy_baselines.loadRun
    monkeypatch.setattr(enjoy_baselines, "loadRun", spy)
    assert enjoy_baselines.main(argv) == 0
    return loaded


def test_load_checkpoint_plays_that_checkpoint(checkpointedRun, monkeypatch, capsys):
    # the 250-step checkpoint's weights and statistics are not the run's latest model's
    latest = _weights(os.path.join(checkpointedRun, "ppo2_model.zip"))
    assert not _sameWeights(_weights(os.path.join(_checkpoint(checkpointedRun, 250), "ppo2_model.zip")), latest)
    with np.load(os.path.join(checkpointedRun, NORMALISATION_FILE)) as final, \
            np.load(os.path.join(_checkpoint(checkpointedRun, 250), NORMALISATION_FILE)) as early:
        assert not np.array_equal(final["obs.mean"], early["obs.mean"])
    loaded = _replay(monkeypatch, ["--log-dir", checkpointedRun, *REPLAY, "--load-checkpoint", "250"])
    assert len(loaded) == 1
    _assertPlays(loaded[0], checkpointedRun, 250)
    out = capsys.readouterr().out
    assert (f"Model: {_checkpoint(checkpointedRun, 250)}/ppo2_model.zip, checkpoint saved at step 250 (of 500 "
            f"trained)\n") in out


def test_the_checkpoint_note_counts_the_steps_trained_not_asked(checkpointedRun, tmp_path):
    """The note said "(of the run's N)" with N the --num-timesteps asked, which a run overshoots (whole rollouts) or
    falls short of (stopped): the manifest's step count is what the run trained."""
    def note(run_dir: str) -> str:
        return LoadedRun(run_dir, argparse.Namespace(num_timesteps=400), None, None,
                         _checkpoint(run_dir, 250), None, checkpoint_steps=250).checkpointNote()

    assert note(checkpointedRun).endswith("saved at step 250 (of 500 trained)")
    run_dir = str(tmp_path / "run")
    shutil.copytree(checkpointedRun, run_dir)
    manifest = os.path.join(run_dir, "manifest.json")
    with open(manifest) as file:
        record = json.load(file)
    with open(manifest, "w") as file:
        json.dump({**record, "num_timesteps": 300, "finished": False}, file)
    assert note(run_dir).endswith("saved at step 250 (of 300 trained so far)")
    os.remove(manifest)  # a run saved before manifests existed: what it was asked to train
    assert note(run_dir).endswith("saved at step 250 (of the run's --num-timesteps 400)")


def test_a_killed_runs_latest_model_is_replayed_as_unfinished(tmp_path, monkeypatch, capsys):
    """A run killed while training (or still training) holds the manifest of its last periodic save, which records
    no "finished" (only the final save does): the replay took that model for a finished run's and said nothing, and
    a checkpoint's note said "(of N trained)" instead of "trained so far"."""
    log_dir = str(tmp_path / "logs")
    output = open(tmp_path / "train.out", "w")  # closed once the process is
    process = startModule("rl_baselines.train", "--no-vis", "--no-progress", *GT, "--algo", "ppo2", "--num-timesteps",
                          "1000000", "--checkpoint-freq", "250", "--log-dir", log_dir, "--hyperparam", "n_steps:125",
                          "batch_size:25", "n_epochs:1", "--num-cpu", "1", stdout=output, stderr=output)
    deadline = time.monotonic() + 120
    manifests: list[str] = []
    while process.poll() is None and time.monotonic() < deadline:  # the run's model and its first checkpoint saved
        time.sleep(0.01)
        manifests = glob.glob(os.path.join(log_dir, "MobileRobotGymEnv-v0", "*", "*", "*", "manifest.json"))
        if manifests and os.path.isdir(os.path.join(os.path.dirname(manifests[0]), "checkpoints", "250_steps")):
            break
    process.kill()  # at once: the next periodic save is 250 steps away
    process.wait()
    output.close()
    assert manifests, "no periodic save before the deadline"
    run_dir = os.path.dirname(manifests[0])
    with open(manifests[0], encoding="utf-8") as file:
        manifest = json.load(file)
    assert "finished" not in manifest  # what a periodic save writes
    steps = manifest["num_timesteps"]
    loaded = _replay(monkeypatch, ["--log-dir", run_dir, *REPLAY])
    assert len(loaded) == 1
    assert (f"Model: {run_dir}/ppo2_model.zip, the latest model of an unfinished run (still training, or stopped), "
            f"saved at {steps:,} of 1,000,000 steps\n") in capsys.readouterr().out
    assert enjoy_baselines.main(["--log-dir", run_dir, *REPLAY, "--load-checkpoint", "250"]) == 0
    assert f"saved at step 250 (of {steps:,} trained so far)" in capsys.readouterr().out


def test_load_last_checkpoint_plays_the_newest(checkpointedRun, monkeypatch, capsys):
    loaded = _replay(monkeypatch, ["--log-dir", checkpointedRun, *REPLAY, "--load-last-checkpoint"])
    _assertPlays(loaded[0], checkpointedRun, 500)
    assert f"Model: {_checkpoint(checkpointedRun, 500)}/ppo2_model.zip, checkpoint saved at step 500" in \
        capsys.readouterr().out


def test_a_run_stopped_before_its_latest_model_was_saved_plays_its_last_checkpoint(checkpointedRun, tmp_path,
                                                                                     monkeypatch, capsys):
    """Killed between a checkpoint and the save of the latest model beside it (which follows it): the run is past its
    first checkpoint, so it replays that checkpoint, not a refusal naming only --model best."""
    run_dir = str(tmp_path / "run")
    shutil.copytree(checkpointedRun, run_dir)
    os.remove(os.path.join(run_dir, "ppo2_model.zip"))
    loaded = _replay(monkeypatch, ["--log-dir", run_dir, *REPLAY])
    _assertPlays(loaded[0], run_dir, 500)
    assert f"Model: {_checkpoint(run_dir, 500)}/ppo2_model.zip, checkpoint saved at step 500" in capsys.readouterr().out


def test_load_last_checkpoint_skips_a_damaged_newer_one(checkpointedRun, tmp_path, monkeypatch, capsys):
    run_dir = str(tmp_path / "run")
    shutil.copytree(checkpointedRun, run_dir)
    damaged = os.path.join(_checkpoint(run_dir, 500), "ppo2_model.zip")
    with open(damaged, "r+b") as handle:
        handle.truncate(os.path.getsize(damaged) // 2)
    loaded = _replay(monkeypatch, ["--log-dir", run_dir, *REPLAY, "--load-last-checkpoint"])
    _assertPlays(loaded[0], run_dir, 250)
    model_line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("Model:"))
    assert "saved at step 250" in model_line and f"skipped the damaged newer checkpoint {_checkpoint(run_dir, 500)}" \
        in model_line and "ppo2_model.zip" in model_line
    assert os.path.isfile(damaged)  # replaying reads only: the damaged checkpoint stays where it is
    # asked for by its step, the damaged checkpoint is refused
    with pytest.raises(UsageError, match=r"^--load-checkpoint 500: checkpoint .*500_steps \(ppo2_model\.zip .*\) is "
                                         r"damaged; the run's other checkpoints \(steps\): 250$"):
        enjoy_baselines.main(["--log-dir", run_dir, *REPLAY, "--load-checkpoint", "500"])
    with pytest.raises(api.UsageError, match=r"^checkpoint=500: checkpoint .*500_steps .* is damaged"):
        api.loadRun(run_dir, checkpoint=500)


@pytest.mark.parametrize("argv, message", [
    (["--load-checkpoint", "300"], r"^--load-checkpoint 300: '.*' has no checkpoint at step 300; its checkpoints "
                                   r"\(steps\): 250, 500$"),
    (["--load-checkpoint", "250", "--model", "best"],
     r"^--load-checkpoint and --model best both choose the model to play: give one of them$"),
    (["--load-last-checkpoint", "--model", "best"],
     r"^--load-last-checkpoint and --model best both choose the model to play: give one of them$"),
    (["--load-checkpoint", "250", "--load-last-checkpoint"], r"not allowed with argument --load-checkpoint"),
])
def test_checkpoint_refusals(checkpointedRun, argv, message):
    with pytest.raises(UsageError, match=message):
        enjoy_baselines.main(["--log-dir", checkpointedRun, *REPLAY, *argv])


def test_a_run_without_checkpoints_is_refused(checkpointedRun, tmp_path):
    run_dir = str(tmp_path / "run")
    shutil.copytree(checkpointedRun, run_dir)
    shutil.rmtree(os.path.join(run_dir, "checkpoints"))
    with pytest.raises(UsageError, match=r"^--load-checkpoint 250: '.*' has no checkpoint at step 250; its "
                                         r"checkpoints \(steps\): none$"):
        enjoy_baselines.main(["--log-dir", run_dir, *REPLAY, "--load-checkpoint", "250"])
    with pytest.raises(UsageError, match=r"^--load-last-checkpoint: '.*' has no checkpoint \(checkpoints/<N>_steps/"):
        enjoy_baselines.main(["--log-dir", run_dir, *REPLAY, "--load-last-checkpoint"])


def test_a_run_without_a_best_model_says_when_a_run_saves_one(checkpointedRun, tmp_path):
    """--model best on a run that saved none (2 episodes, fewer than --min-episodes-save): when one is saved, and the
    way to the latest model; for a run with evaluations, its first evaluation."""
    way_out = r"; --model latest plays the last saved model$"
    with pytest.raises(UsageError, match=r"holds no best model \(.*best/ppo2_model.zip is missing\); a run saves one "
                                         r"once 100 episodes have finished \(--min-episodes-save\)" + way_out):
        enjoy_baselines.main(["--log-dir", checkpointedRun, *REPLAY, "--model", "best"])
    run_dir = str(tmp_path / "run")
    shutil.copytree(checkpointedRun, run_dir)
    with open(os.path.join(run_dir, "args.json"), encoding="utf-8") as handle:
        recorded = json.load(handle)
    with open(os.path.join(run_dir, "args.json"), "w", encoding="utf-8") as handle:
        json.dump({**recorded, "eval_freq": 250}, handle)
    with pytest.raises(UsageError, match=r"; a run saves one at its first evaluation \(--eval-freq\)" + way_out):
        enjoy_baselines.main(["--log-dir", run_dir, *REPLAY, "--model", "best"])


def test_a_missing_checkpoint_exits_2_in_one_line_and_writes_nothing(checkpointedRun, tmp_path):
    video, plots = tmp_path / "replay.gif", tmp_path / "plots"
    result = runModule("replay.enjoy_baselines", "--log-dir", checkpointedRun, *REPLAY, "--load-checkpoint", "1000",
                       "--video", str(video), "--plotting", "--output-dir", str(plots))
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"error: --load-checkpoint 1000: {checkpointedRun!r} has no checkpoint at step 1000; its checkpoints (steps): "
        f"250, 500"]
    assert os.listdir(tmp_path) == [] and not os.path.exists(os.path.join(checkpointedRun, "replay"))


def test_api_loads_a_checkpoint(checkpointedRun):
    _assertPlays(api.loadRun(checkpointedRun, checkpoint=250), checkpointedRun, 250)
    _assertPlays(api.loadRun(checkpointedRun, checkpoint=np.int64(250)), checkpointedRun, 250)
    last = api.loadRun(checkpointedRun, checkpoint="last")
    _assertPlays(last, checkpointedRun, 500)
    assert last.checkpointNote().startswith(f"checkpoint {_checkpoint(checkpointedRun, 500)}, saved at step 500")
    latest = api.loadRun(checkpointedRun)
    assert latest.checkpoint_steps is None and latest.checkpointNote() is None
    with pytest.raises(api.UsageError, match=r"^checkpoint=300: '.*' has no checkpoint at step 300; its checkpoints "
                                             r"\(steps\): 250, 500$"):
        api.loadRun(checkpointedRun, checkpoint=300)
    with pytest.raises(api.UsageError, match=r"^checkpoint=250 and the best model both name the model to load"):
        api.loadRun(checkpointedRun, which="best", checkpoint=250)
    for bad in ("newest", True, -1, 2.5):
        with pytest.raises(api.UsageError, match=rf"^checkpoint {bad!r} must be a step count \(an integer >= 0\), "
                                                 r"'last' \(the newest intact checkpoint\) or None"):
            api.loadRun(checkpointedRun, checkpoint=bad)


def test_a_refusal_prints_its_error_alone(tmp_path):
    """A run of a physics version its env cannot rebuild (a warning, when the env is built) whose normalisation does
    not fit the env (a refusal, after it): the one-line error alone; accepted, the warning is shown once."""
    run_dir = trainHere("--algo", "ppo2", "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth",
                        "--num-timesteps", "64", "--hyperparam", "n_steps:32", "--log-dir", tmp_path / "logs")
    with open(os.path.join(run_dir, "env_globals.json")) as handle:
        recorded = json.load(handle)
    recorded["constants"]["PHYSICS_VERSION"] = 7
    with open(os.path.join(run_dir, "env_globals.json"), "w") as handle:
        json.dump(recorded, handle)
    normalisation = os.path.join(run_dir, NORMALISATION_FILE)
    kept = open(normalisation, "rb").read()
    with np.load(normalisation) as saved:
        arrays = {**saved, "obs.mean": np.zeros(5), "obs.var": np.ones(5)}
    np.savez(normalisation, **arrays)
    manifest_file = os.path.join(run_dir, "manifest.json")
    with open(manifest_file) as handle:
        manifest = json.load(handle)
    kept_hash = manifest["files"][NORMALISATION_FILE]
    manifest["files"][NORMALISATION_FILE] = hashlib.sha256(open(normalisation, "rb").read()).hexdigest()
    with open(manifest_file, "w") as handle:
        json.dump(manifest, handle)
    result = runModule("replay.enjoy_baselines", "--log-dir", run_dir, "--num-timesteps", "5", "--no-progress")
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "is for observations of shape (5,)" in result.stderr, result.stderr
    with open(normalisation, "wb") as handle:
        handle.write(kept)
    manifest["files"][NORMALISATION_FILE] = kept_hash
    with open(manifest_file, "w") as handle:
        json.dump(manifest, handle)
    result = runModule("replay.enjoy_baselines", "--log-dir", run_dir, "--num-timesteps", "5", "--no-progress")
    assert result.returncode == 0, result.stderr
    assert [line for line in result.stderr.splitlines() if line.startswith("warning: ")] == [
        f"warning: the run in {run_dir!r} was made with physics version 7 of MobileRobotGymEnv-v0, which simulates "
        "only version 1 now: its episodes may differ"]


def test_the_first_step_of_a_replay_is_an_episode_start(checkpointedRun, monkeypatch):
    """The replay's first getAction was given dones all False where evaluation, the API's playEpisodes and the
    generator's --policy give all True (a recurrent agent restarts its state there): it gives all True now."""
    load, seen = enjoy_baselines.loadRun, []

    def loadRecording(*args, **kwargs):
        run = load(*args, **kwargs)
        getAction = run.model.getAction

        def recording(observation, dones, **options):
            seen.append(np.array(dones, dtype=bool))
            return getAction(observation, dones, **options)

        run.model.getAction = recording
        return run

    monkeypatch.setattr(enjoy_baselines, "loadRun", loadRecording)
    assert enjoy_baselines.main(["--log-dir", checkpointedRun, "--num-timesteps", "10", "--no-progress"]) == 0
    assert len(seen) == 10 and seen[0].tolist() == [True] and seen[1].tolist() == [False]


def test_a_folder_inside_a_run_names_the_run_and_the_flag_that_plays_it(checkpointedRun, tmp_path):
    """--log-dir given a run's checkpoint folder (as rl_zoo3 users point at a saved model's folder), its checkpoints/
    or best/ folder: the refusal said only "holds no run"; it names the run and the flag that plays that model."""
    run_dir = str(tmp_path / "run")
    shutil.copytree(checkpointedRun, run_dir)
    os.makedirs(os.path.join(run_dir, "best"), exist_ok=True)
    for below, flag in (("checkpoints/250_steps", " --load-checkpoint 250"),
                        ("checkpoints/250_steps/training_state", " --load-checkpoint 250"),
                        ("checkpoints", " --load-last-checkpoint"), ("best", " --model best"), ("monitor", "")):
        folder = os.path.join(run_dir, *below.split("/"))
        with pytest.raises(UsageError, match=rf"^--log-dir '{re.escape(folder)}' is {below}/ inside the run "
                                             rf"{re.escape(run_dir)}, not a run folder: give --log-dir "
                                             rf"{re.escape(run_dir)}{flag}$"):
            enjoy_baselines.main(["--log-dir", folder, *REPLAY])


def test_a_run_that_saved_no_model_yet_says_when_it_will(checkpointedRun, tmp_path):
    """A run still training before its first checkpoint (no model, no checkpoint, no best model) was refused with
    "holds no latest model" alone; the refusal says when such a run saves one."""
    run_dir = str(tmp_path / "run")
    shutil.copytree(checkpointedRun, run_dir)
    os.remove(os.path.join(run_dir, "ppo2_model.zip"))
    shutil.rmtree(os.path.join(run_dir, "checkpoints"))
    # a finished run whose model was deleted since: its manifest lists the model (it had said "saved no model yet")
    with pytest.raises(UsageError, match=r"holds no latest model \(.*\); the run saved it at step 500 "
                                         r"\(manifest.json lists it, a finished run\): deleted or moved since$"):
        enjoy_baselines.main(["--log-dir", run_dir, *REPLAY])
    os.remove(os.path.join(run_dir, "manifest.json"))  # (as before the run's first save)
    with pytest.raises(UsageError, match=r"holds no latest model \(.*\); the run has saved no model yet \(still "
                                         r"training, or stopped before\): it saves one at its first checkpoint, due at "
                                         r"step 250 \(--checkpoint-freq\) and written at the first step from there "
                                         r"where the algorithm can save its whole training state \(ppo2, a2c: their "
                                         r"next rollout's start\), its best model once 100 episodes have finished "
                                         r"\(--min-episodes-save\)$"):
        enjoy_baselines.main(["--log-dir", run_dir, *REPLAY])


def test_an_args_json_edited_to_another_action_kind_is_refused_by_the_replay_and_the_recorder(tmp_path, trainedRun):
    """args.json edited to continuous actions beside a discrete agent: enjoy_baselines and the dataset generator's
    --policy crashed in the env's step ("continuous action must be 2 finite value(s)"), the recorder after making its
    dataset folder: one line naming args.json, nothing written."""
    run_dir = str(tmp_path / "edited")
    shutil.copytree(trainedRun, run_dir)
    with open(os.path.join(run_dir, "args.json")) as handle:
        recorded = json.load(handle)
    with open(os.path.join(run_dir, "args.json"), "w") as handle:
        json.dump({**recorded, "continuous_actions": True}, handle)
    with pytest.raises(UsageError, match=r"args\.json builds another action space than the agent's: the agent takes "
                                         r"Discrete\(4\), the env gives Box"):
        enjoy_baselines.main(["--log-dir", run_dir, "--num-timesteps", "4"])
    with pytest.raises(ValueError, match=r"args\.json says continuous actions, but its agent takes Discrete\(4\)$"):
        RunPolicy(run_dir).load()
