"""gail: the learner is rewarded by the discriminator only (the env's reward poisoned with NaN changes nothing it
sees), the expert's states and frames reach the discriminator as the env's own (an expert episode replayed in the env
gives them back: frames bit for bit, states to float32 rounding), and a run is listed, trained, replayed, recorded
from (``dataset_generator --policy RUN``), swept and resumed exactly. Bad inputs: tests/test_bad_inputs.py; the
determinism and evaluation of every algorithm, gail included: tests/test_determinism.py, tests/test_evaluation.py.

The committed expert (``tests/data/gail_expert_mobile``: 2 episodes of 250 steps on MobileRobotGymEnv-v0 with a
random target, discrete actions, ground truth only) was written by :func:`recordScriptedExpert` (seed 0).
"""
from __future__ import annotations

import glob
import io
import json
import os
import shutil
import zipfile

import numpy as np
import pytest
import torch
import yaml
from conftest import REPO, interruptedRun, interruptThenResume, runModule, snapshot, trainArgs, trainHere, trainSettings
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnvWrapper
from test_determinism import monitorRows

from environments.dataset_generator import episodeSeed
from environments.mobile_robot.mobile_robot_env import MobileRobotGymEnv
from rl_baselines.envs.srl_encoder import SRLEncoderVecEnv
from rl_baselines.rl_algorithm.gail import DISCRIMINATOR_MEMBER, GAILModel
from rl_baselines.rl_algorithm.gail_discriminator import ExpertData, channelFirst, findEncoder, gailReward
from rl_baselines.runs import train
from srl_models.train import trainFromArgs
from srl_toolbox.cli import UsageError

pytestmark = pytest.mark.slow  # whole trainings: left out of `make test-fast`

EXPERT = os.path.join(REPO, "tests", "data", "gail_expert_mobile")
GT = ["--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth", "-r"]
# Checkpoints every 250 steps fall on rollout and episode ends (MobileRobot episodes last 250 steps): a resumed run
# then trains exactly as the uninterrupted one (as in tests/test_evaluation.py).
RUN = [*GT, "--algo", "gail", "--gail-dataset", EXPERT, "--num-timesteps", "500", "--checkpoint-freq", "250",
       "--seed", "1", "--min-episodes-save", "1", "--hyperparam", "n_steps:125", "batch_size:25", "n_epochs:2"]


def scriptedAction(relative: np.ndarray) -> int:
    """MobileRobot expert: a step along the axis of the larger gap to the target (actions -x, +x, -y, +y)."""
    dx, dy = relative
    return (0 if dx > 0 else 1) if abs(dx) >= abs(dy) else (2 if dy > 0 else 3)


def recordScriptedExpert(folder: str, episodes: int = 2, seed: int = 0) -> None:
    """Write the scripted expert's episodes in the dataset generator's format (ground truth only, no frames)."""
    env = MobileRobotGymEnv(srl_model="ground_truth", is_discrete=True, random_target=True)
    states, actions, rewards, starts, targets = [], [], [], [], []
    for episode in range(episodes):
        env.reset(seed=seed + episode)
        targets.append(env.getTargetPos().copy())
        done, first = False, True
        while not done:
            robot = env.getRobotPos().copy()
            action = scriptedAction(robot - env.getTargetPos())
            states.append(robot), actions.append(action), starts.append(first)
            _, reward, terminated, truncated, _ = env.step(action)
            rewards.append(reward)
            done, first = terminated or truncated, False
    env.close()
    os.makedirs(folder)
    np.savez(os.path.join(folder, "preprocessed_data.npz"), actions=np.array(actions, np.int64),
             rewards=np.array(rewards, np.float32), episode_starts=np.array(starts))
    np.savez(os.path.join(folder, "ground_truth.npz"), ground_truth_states=np.array(states, np.float32),
             target_positions=np.array(targets, np.float32))
    with open(os.path.join(folder, "dataset_config.json"), "w", encoding="utf-8") as handle:
        json.dump({"env": "MobileRobotGymEnv-v0", "relative_pos": True, "img_shape": [3, 64, 64],
                   "image_format": "png", "continuous_actions": False, "random_target": True, "shape_reward": False,
                   "multi_view": False, "policy": "scripted", "num_episodes": episodes, "seed": seed, "version": 1},
                  handle, indent=2)


@pytest.fixture(scope="module")
def gailRun(tmp_path_factory) -> str:
    """A gail (ppo2) run of 500 steps from the committed expert, checkpointed at 250; trained in this process."""
    return trainHere(*RUN, "--log-dir", tmp_path_factory.mktemp("gail"))


def _discriminatorState(model_path: str) -> dict:
    with zipfile.ZipFile(model_path) as archive:
        return torch.load(io.BytesIO(archive.read(DISCRIMINATOR_MEMBER)), weights_only=True)


def _policyState(model_path: str) -> dict:
    with zipfile.ZipFile(model_path) as archive:
        return torch.load(io.BytesIO(archive.read("policy.pth")), weights_only=True)


def test_train_help_lists_gail(capsys):
    with pytest.raises(SystemExit) as exit_code:
        train.main(["--help"])
    listed = capsys.readouterr().out.split("  --algo ALGO")[1].split("  --env ENV")[0]
    assert exit_code.value.code == 0 and "gail" in listed.replace(",", " ").split()
    with pytest.raises(SystemExit):
        train.main(["--algo", "gail", "--help"])
    out = " ".join(capsys.readouterr().out.split())  # help lines wrap
    for flag in ("--gail-dataset", "--gail-learner", "--d-reward", "--n-critic-updates", "ppo2, a2c, trpo"):
        assert flag in out, flag


def test_learner_never_reads_the_env_reward(tmp_path):
    """The env's reward is NaN: the learner's rollouts hold the discriminator's rewards and its weights stay finite."""

    class PoisonedReward(VecEnvWrapper):
        def reset(self):
            return self.venv.reset()

        def step_wait(self):
            observations, rewards, dones, infos = self.venv.step_wait()
            return observations, np.full_like(rewards, np.nan), dones, infos

    class CheckRollouts(BaseCallback):
        """Before each discriminator update (it runs after this callback): buffer rewards = D's rewards."""

        def __init__(self, algo: GAILModel) -> None:
            super().__init__()
            self.algo, self.rollouts = algo, 0

        def _on_step(self) -> bool:
            return True

        def _on_rollout_end(self) -> None:
            buffer = self.model.rollout_buffer
            observations = buffer.observations.reshape(-1, *buffer.obs_shape)
            expected = gailReward(self.algo.discriminator.logits(observations, buffer.actions.reshape(-1)), "gail")
            assert np.all(np.isfinite(buffer.rewards)) and np.all(buffer.rewards > 0)  # -log(1 - D) > 0
            np.testing.assert_allclose(buffer.rewards.reshape(-1), expected, rtol=1e-5, atol=1e-6)
            self.rollouts += 1

    args = trainArgs("gail", env="MobileRobotGymEnv-v0", srl_model="ground_truth", random_target=True,
                     gail_dataset=EXPERT, seed=2)
    settings = trainSettings(args)
    hyperparams = GAILModel.hyperparamsFromArgs(settings, {"n_steps": 64, "n_epochs": 1})
    algo = GAILModel()
    check = CheckRollouts(algo)
    env = PoisonedReward(GAILModel.makeTrainingEnv(settings))
    algo.train(env, 192, hyperparams, check, None, settings)
    assert check.rollouts == 3
    assert all(torch.isfinite(p).all() for p in algo.model.policy.parameters())
    assert all(torch.isfinite(p).all() for p in algo.discriminator.parameters())


def test_run_replays_and_records_an_expert_dataset(gailRun, tmp_path):
    model_path = os.path.join(gailRun, "gail_model.zip")
    assert set(_discriminatorState(model_path)) == {"weights", "optimizer", "generator"}
    loaded = GAILModel.load(model_path)
    assert loaded.gail_learner == "ppo2" and loaded.num_timesteps == 500
    with open(os.path.join(gailRun, "progress.csv"), encoding="utf-8") as handle:
        assert "gail/discriminator_loss" in handle.readline()
    result = runModule("replay.enjoy_baselines", "--log-dir", gailRun, "--num-timesteps", "250", "--deterministic")
    assert result.returncode == 0, result.stderr
    assert "Mean episode reward over 1 episode:" in result.stdout


def test_expert_states_and_frames_are_the_envs(gailRun, tmp_path):
    """An expert dataset recorded by replaying the gail run: its episode, replayed in the learner's env, gives back
    the expert's observations: lossless frames bit for bit, states (relative to the target) to float32 rounding, and
    learned states as the run's encoder gives them."""
    data = str(tmp_path / "data")
    result = runModule("environments.dataset_generator", "--env", "MobileRobotGymEnv-v0", "--policy", gailRun,
                       "--num-episode", "1", "--max-steps", "30", "--img-shape", "3", "36", "36", "--image-format",
                       "png", "--renderer", "sprites", "-r", "--save-path", data, "--name", "expert", "--no-progress")
    assert result.returncode == 0, result.stderr
    folder = os.path.join(data, "expert")
    for srl_model in ("ground_truth", "raw_pixels"):
        env = MobileRobotGymEnv(srl_model=srl_model, is_discrete=True, random_target=True, img_shape=(3, 36, 36),
                                renderer="sprites", max_steps=30)
        venv = DummyVecEnv([lambda env=env: env])
        expert = ExpertData.load(folder, venv, srl_model)
        observation, _ = env.reset(seed=episodeSeed(0, 0))
        replayed = [observation]
        for action in expert.actions[:-1]:
            replayed.append(env.step(int(action))[0])
        venv.close()
        replayed = np.array(replayed)
        assert len(expert.observations) == 30
        if srl_model == "raw_pixels":  # in the discriminator's layout (the learner's rollout buffer's)
            assert expert.observations.dtype == np.uint8
            np.testing.assert_array_equal(expert.observations, channelFirst(replayed))
            frames = replayed
        else:  # the dataset stores absolute float32 positions: the difference is rounded once more
            assert expert.observations.dtype == replayed.dtype == np.float32
            np.testing.assert_allclose(expert.observations, replayed, rtol=0, atol=1e-6)
    # a learned SRL model (a random encoder made from the dataset): the expert's frames are encoded by the run's own
    # encoder, the one in the learner's env, exactly as the replayed frames are there
    model = trainFromArgs(["--data-folder", folder, "--log-folder", str(tmp_path / "srl"), "--srl-model", "random",
                           "--state-dim", "3", "--no-eval", "--no-progress"])
    settings = trainSettings(trainArgs("gail", env="MobileRobotGymEnv-v0", srl_model="random", srl_model_path=model,
                                       img_shape=[3, 36, 36], renderer="sprites", random_target=True,
                                       gail_dataset=folder))
    venv = GAILModel.makeTrainingEnv(settings)
    try:
        expert = ExpertData.load(folder, venv, "random")
        encoder = venv.venv
        assert isinstance(encoder, SRLEncoderVecEnv) and findEncoder(venv) is encoder.model
        np.testing.assert_array_equal(expert.observations, encoder.encode(frames))
    finally:
        venv.close()


def test_resumed_run_equals_the_uninterrupted_one(gailRun, tmp_path, monkeypatch):
    # a second Ctrl-C at step 400: the run goes on from its checkpoint at 250
    run_dir = interruptThenResume(monkeypatch, str(tmp_path), RUN, 400)
    assert monitorRows(run_dir) == monitorRows(gailRun)
    resumed, uninterrupted = (os.path.join(folder, "gail_model.zip") for folder in (run_dir, gailRun))
    for read in (_policyState, _discriminatorState):
        _assertSame(read(resumed), read(uninterrupted), read.__name__)


def _assertSame(value, expected, where: str) -> None:
    """Nested state dicts equal, tensors bit for bit."""
    if isinstance(expected, dict):
        assert isinstance(value, dict) and sorted(value, key=str) == sorted(expected, key=str), where
        for key in expected:
            _assertSame(value[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, (list, tuple)):
        assert len(value) == len(expected), where
        for index, (item, other) in enumerate(zip(value, expected)):
            _assertSame(item, other, f"{where}[{index}]")
    elif isinstance(expected, torch.Tensor):
        assert torch.equal(value, expected), where
    else:
        assert value == expected, where


def test_sweep_trains_gail(tmp_path):
    result = runModule("rl_baselines.pipeline", "--algo", "gail", "--env", "MobileRobotGymEnv-v0",
                       "--srl-model", "ground_truth", "--num-timesteps", "256", "--num-iteration", "1", "--no-vis",
                       "--no-progress", "--log-dir", tmp_path, "--algo-args",
                       f"gail:--gail-dataset {EXPERT} --gail-learner a2c")
    assert result.returncode == 0, result.stdout + result.stderr
    (model,) = glob.glob(os.path.join(str(tmp_path), "MobileRobotGymEnv-v0", "ground_truth", "gail", "*",
                                      "gail_model.zip"))
    assert GAILModel.load(model).gail_learner == "a2c"


def _refusedBeforeWriting(tmp_path, *args: str) -> str:
    """:return: the one-line refusal of the train command (in this process), which wrote nothing"""
    before = snapshot(str(tmp_path))
    with pytest.raises(UsageError) as refusal:
        train.trainCommand(["--no-vis", "--no-progress", "--num-timesteps", "64", "--log-dir", str(tmp_path / "logs"),
                            *map(str, args)])
    assert snapshot(str(tmp_path)) == before and not os.path.exists(tmp_path / "logs")
    message = str(refusal.value)
    assert "\n" not in message
    return message


def _expertCopy(tmp_path, name: str, actions=None, states=None) -> str:
    """The committed expert, copied with its actions or ground-truth states changed by the functions given."""
    folder = str(tmp_path / name)
    shutil.copytree(EXPERT, folder)
    for file, key, change in (("preprocessed_data.npz", "actions", actions),
                              ("ground_truth.npz", "ground_truth_states", states)):
        if change is not None:
            with np.load(os.path.join(folder, file)) as data:
                arrays = dict(data)
            arrays[key] = change(arrays[key])
            np.savez(os.path.join(folder, file), **arrays)
    return folder


def _withValue(value, dtype=None):
    def change(array):
        array = array.astype(dtype or array.dtype)
        array[3] = value
        return array
    return change


BAD_EXPERTS = {  # name: (how the committed expert is spoiled, words of the refusal)
    "action-out-of-range": ({"actions": _withValue(9)}, ["action 9 (row 3)", "integers 0..3"]),
    "negative-action": ({"actions": _withValue(-1)}, ["action -1 (row 3)", "integers 0..3"]),
    "fractional-action": ({"actions": _withValue(1.5, np.float64)}, ["action 1.5 (row 3)", "integers 0..3"]),
    "nan-action": ({"actions": _withValue(np.nan, np.float64)}, ["action nan (row 3)", "integers 0..3"]),
    "nan-state": ({"states": _withValue(np.nan)}, ["ground_truth_states [nan, nan] (row 3)", "finite"]),
}


@pytest.mark.parametrize("flag", ["--gail-dataset", "--pretrain-dataset"])
@pytest.mark.parametrize("case", [*BAD_EXPERTS, "truncated-npz", "empty-npz"])
def test_bad_expert_dataset_is_refused_before_anything_is_written(tmp_path, case, flag):
    """Files cut short or emptied, actions the env does not take, states that are not numbers: one line, exit 2,
    nothing written (imitation and behaviour cloning read datasets alike)."""
    if case in BAD_EXPERTS:
        changes, words = BAD_EXPERTS[case]
        folder = _expertCopy(tmp_path, "expert", **changes)
    else:
        folder = _expertCopy(tmp_path, "expert")
        file = "preprocessed_data.npz" if case == "truncated-npz" else "ground_truth.npz"
        with open(os.path.join(folder, file), "rb") as handle:
            head = handle.read(100 if case == "truncated-npz" else 0)
        with open(os.path.join(folder, file), "wb") as handle:
            handle.write(head)
        words = ["is not a readable dataset", "BadZipFile" if case == "truncated-npz" else "EOFError"]
    algo = ["--algo", "gail"] if flag == "--gail-dataset" else ["--algo", "ppo2"]
    message = _refusedBeforeWriting(tmp_path, *GT, *algo, flag, folder)
    assert message.startswith(flag) and all(word in message for word in words), message


def test_joint_actions_are_refused_before_anything_is_written(tmp_path):
    """A Kuka dataset of joint actions (7 per row) is refused for a run of end-effector actions (3): by the
    dataset_config.json's action_joints, or, in a dataset that does not record it, by the actions' shape."""
    result = runModule("environments.dataset_generator", "--env", "KukaButtonGymEnv-v0", "-c", "-joints",
                       "--num-episode", "1", "--max-steps", "5", "--save-path", tmp_path / "data", "--name",
                       "kjoints", "--no-progress")
    assert result.returncode == 0, result.stderr
    recorded = str(tmp_path / "data" / "kjoints")
    with open(os.path.join(recorded, "dataset_config.json"), encoding="utf-8") as handle:
        config = json.load(handle)
    assert config["action_joints"] is True
    older = shutil.copytree(recorded, str(tmp_path / "older"))
    del config["action_joints"]
    with open(os.path.join(older, "dataset_config.json"), "w", encoding="utf-8") as handle:
        json.dump(config, handle)
    kuka = ["--env", "KukaButtonGymEnv-v0", "-c", "--srl-model", "ground_truth"]
    for algo, flag in (("gail", "--gail-dataset"), ("ppo2", "--pretrain-dataset")):
        message = _refusedBeforeWriting(tmp_path, *kuka, "--algo", algo, flag, recorded)
        assert message.startswith(flag) and "joint actions (add --action-joints)" in message, message
        message = _refusedBeforeWriting(tmp_path, *kuka, "--algo", algo, flag, older)
        assert "actions of shape (7,) per row, the run's are (3,)" in message, message


def _hyperparams(run_dir: str) -> dict:
    with open(os.path.join(run_dir, "hyperparams.yaml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def test_continued_model_keeps_its_discriminator_hyperparameters(tmp_path):
    """A continued gail model goes on with the d_* values it was trained with (saved in its zip), a d_hidden given
    against the saved one is refused before anything is written, and hyperparams.yaml alone (naming the learner)
    repeats the run."""
    short = [*GT, "--algo", "gail", "--gail-dataset", EXPERT, "--num-timesteps", "128"]
    first = trainHere(*short, "--gail-learner", "trpo", "--hyperparam", "d_hidden:16", "n_steps:64", "--d-reward",
                      "airl", "--d-batch-size", "32", "--d-epochs", "2", "--d-entcoeff", "0.01",
                      "--log-dir", tmp_path / "first")
    saved = _hyperparams(first)
    assert saved["gail_learner"] == "trpo" and saved["d_hidden"] == 16 and saved["d_reward"] == "airl"
    model = os.path.join(first, "gail_model.zip")
    continued = trainHere(*short, "--load-rl-model-path", model, "--log-dir", tmp_path / "continued")
    assert _hyperparams(continued) == saved
    assert GAILModel.savedHyperparams(os.path.join(continued, "gail_model.zip"))["d_batch_size"] == 32
    for given in (["--d-hidden", "32"], ["--hyperparam", "d_hidden:32"]):
        message = _refusedBeforeWriting(tmp_path, *short, "--load-rl-model-path", model, *given)
        assert message.startswith("d_hidden 32") and "d_hidden 16" in message and "valid: 16" in message, message
    repeated = trainHere(*short, "--hyperparam-file", os.path.join(first, "hyperparams.yaml"),
                         "--log-dir", tmp_path / "repeated")
    assert _hyperparams(repeated) == saved
    assert GAILModel.load(os.path.join(repeated, "gail_model.zip")).gail_learner == "trpo"
    with open(os.path.join(repeated, "progress.csv"), encoding="utf-8") as one, \
            open(os.path.join(first, "progress.csv"), encoding="utf-8") as other:
        assert [row.split(",")[:3] for row in one] == [row.split(",")[:3] for row in other]
    message = _refusedBeforeWriting(tmp_path, *short, "--hyperparam-file", os.path.join(first, "hyperparams.yaml"),
                                    "--gail-learner", "ppo2")
    assert "--gail-learner ppo2" in message and "gail_learner: trpo" in message, message


def test_hyperparam_file_key_of_another_learner_is_refused_before_anything_is_written(tmp_path):
    hyperparam_file = tmp_path / "hp.yaml"
    hyperparam_file.write_text("cg_damping: 0.2\n", encoding="utf-8")
    message = _refusedBeforeWriting(tmp_path, *GT, "--algo", "gail", "--gail-dataset", EXPERT,
                                    "--hyperparam-file", hyperparam_file)
    assert message.startswith("cg_damping") and "--gail-learner ppo2" in message, message


def _argsJson(run_dir: str) -> dict:
    with open(os.path.join(run_dir, "args.json"), encoding="utf-8") as handle:
        return json.load(handle)


def test_args_json_names_the_learner_and_an_older_null_still_resumes(tmp_path, monkeypatch):
    """args.json records the learner trained (it used to store null without --gail-learner), the one a
    --hyperparam-file names too; a run whose args.json has the older null resumes with the default learner."""
    short = [*GT, "--algo", "gail", "--gail-dataset", EXPERT, "--num-timesteps", "128", "--hyperparam", "n_steps:64"]
    run_dir = trainHere(*short, "--log-dir", tmp_path / "default")
    assert _argsJson(run_dir)["gail_learner"] == "ppo2" == _hyperparams(run_dir)["gail_learner"]
    hyperparam_file = tmp_path / "hp.yaml"
    hyperparam_file.write_text("gail_learner: a2c\n", encoding="utf-8")
    from_file = trainHere(*short, "--hyperparam-file", hyperparam_file, "--log-dir", tmp_path / "file")
    assert _argsJson(from_file)["gail_learner"] == "a2c"
    older = interruptedRun(monkeypatch, str(tmp_path / "older"), [*short[:-3], "256", "--hyperparam", "n_steps:64",
                                                                   "--checkpoint-freq", "128"], 200)
    args = _argsJson(older)
    args["gail_learner"] = None
    with open(os.path.join(older, "args.json"), "w", encoding="utf-8") as handle:
        json.dump(args, handle)
    assert train.main(["--resume", older, "--no-vis", "--no-progress"]) == 0
    assert GAILModel.load(os.path.join(older, "gail_model.zip")).gail_learner == "ppo2"
    assert _argsJson(older)["gail_learner"] is None  # (args.json is not rewritten by a resume)
