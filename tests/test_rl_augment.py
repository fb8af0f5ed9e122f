"""``--augment shift`` for end-to-end pixel RL: the batches of the updates are shifted views, the stored data is not.

ppo2's DrAC regulariser (the default ``--augment-loss``) adds exactly the gradient of its weighted KL on shifted
views to each update, once, and learns from the rollout as collected (an interrupted run resumes as the
uninterrupted one, regulariser included); under ``--augment-loss rad`` ppo2's minibatches
and the replay samples of the replay-buffer algorithms are each a shift (up to 4 pixels, border
repeated) of the image stored at their row, the buffers keep the images as collected, a replay sample's observations
and next observations are shifted independently, the train command gives the algorithms these buffers (and a model
continued with ``--augment none`` SB3's own). The refusals are cases of tests/test_bad_inputs.py.
"""
from __future__ import annotations

import csv
import json
import os
import zipfile

import gymnasium as gym
import numpy as np
import torch
from conftest import interruptedRun, interruptThenResume, trainHere
from gymnasium import spaces
from stable_baselines3 import PPO
from stable_baselines3.common.buffers import ReplayBuffer, RolloutBuffer
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.vec_env import DummyVecEnv
from torch.nn import functional as F

from environments.mobile_robot.mobile_robot_env import MobileRobotGymEnv
from rl_baselines.core.registry import registered_rl
from rl_baselines.rl_algorithm.augmented_buffers import AugmentedReplayBuffer, AugmentedRolloutBuffer
from rl_baselines.rl_algorithm.drac import DrACRegulariser, actionKL, detachedDistribution
from rl_baselines.runs import train
from srl_models.augment import PAD

SIDE = 12
IMAGES = spaces.Box(0, 255, (3, SIDE, SIDE), np.uint8)
# The action of a row is its index: a batch says which stored row each of its views comes from.
ROW = spaces.Box(0.0, 1000.0, (1,), np.float32)
PIXELS = ["--env", "MobileRobotGymEnv-v0", "--srl-model", "raw_pixels", "--img-shape", "3", "40", "40"]


def _randomImages(count: int, generator: np.random.Generator) -> np.ndarray:
    """:return: ``count`` noise images: every shift of one of them is a different image"""
    return generator.integers(0, 256, (count, *IMAGES.shape), dtype=np.uint8)


def _offset(view: torch.Tensor, stored: np.ndarray) -> tuple[int, int] | None:
    """:return: the (dy, dx) by which ``view`` is ``stored`` shifted with its border repeated, None if it is none"""
    padded = F.pad(torch.as_tensor(stored)[None].float(), (PAD,) * 4, mode="replicate")[0]
    for dy in range(2 * PAD + 1):
        for dx in range(2 * PAD + 1):
            if torch.equal(padded[:, dy:dy + SIDE, dx:dx + SIDE], view.float()):
                return dy - PAD, dx - PAD
    return None


def test_ppo_minibatches_are_shifted_views_and_the_rollout_stays_as_collected() -> None:
    generator = np.random.default_rng(0)
    steps, envs = 8, 2
    buffer = AugmentedRolloutBuffer(steps, IMAGES, ROW, n_envs=envs)
    images = _randomImages(steps * envs, generator).reshape(steps, envs, *IMAGES.shape)
    for step in range(steps):
        rows = np.arange(step * envs, (step + 1) * envs, dtype=np.float32)[:, None]  # row = step * envs + env
        buffer.add(images[step], rows, np.ones(envs), np.zeros(envs, dtype=bool), torch.zeros(envs),
                   torch.zeros(envs))
    offsets, seen = [], []
    for batch in buffer.get(batch_size=5):
        assert batch.observations.dtype == torch.uint8 and batch.observations.shape[1:] == IMAGES.shape
        for view, row in zip(batch.observations, batch.actions[:, 0].long()):
            step, env = divmod(int(row), envs)
            offsets.append(_offset(view, images[step, env]))
            seen.append(int(row))
    assert sorted(seen) == list(range(steps * envs)) and None not in offsets, offsets
    assert len(set(offsets)) > 1 and any(offset != (0, 0) for offset in offsets)  # each image its own shift
    # the rollout as collected (get() flattened it to (env, step) order)
    np.testing.assert_array_equal(buffer.observations, images.swapaxes(0, 1).reshape(-1, *IMAGES.shape))


def test_replay_samples_shift_observations_and_next_observations_independently() -> None:
    generator = np.random.default_rng(1)
    size = 16
    buffer = AugmentedReplayBuffer(size, IMAGES, ROW, n_envs=1)
    observations, next_observations = _randomImages(size, generator), _randomImages(size, generator)
    for row in range(size):
        buffer.add(observations[row:row + 1], next_observations[row:row + 1], np.array([[row]], np.float32),
                   np.zeros(1), np.zeros(1, dtype=bool), [{}])
    stored = (buffer.observations.copy(), buffer.next_observations.copy())
    samples = buffer.sample(64)
    online, target = [], []
    for view, next_view, row in zip(samples.observations, samples.next_observations, samples.actions[:, 0].long()):
        online.append(_offset(view, observations[int(row)]))
        target.append(_offset(next_view, next_observations[int(row)]))
    assert None not in online and None not in target
    assert len(set(online)) > 1 and len(set(target)) > 1  # each view shifted, each image by its own offset
    assert online != target  # drawn on their own (all 64 pairs equal by chance: 81**-64)
    np.testing.assert_array_equal(buffer.observations, stored[0])
    np.testing.assert_array_equal(buffer.next_observations, stored[1])


def _bufferRecord(model_file: str, keyword: str) -> tuple[str, dict]:
    """:return: the buffer class a saved SB3 model builds (its module and name) and its keywords"""
    with zipfile.ZipFile(model_file) as archive:
        data = json.loads(archive.read("data"))
    return data[f"{keyword}_class"].get("__module__", ""), data[f"{keyword}_kwargs"]


def test_ppo2_rad_trains_on_shifted_minibatches_the_same_for_a_seed_and_a_continued_run_can_stop(tmp_path) -> None:
    short = ["--num-timesteps", "64", "--n-steps", "8", "--batch-size", "32", "--n-epochs", "1"]  # x 4 envs
    rad = ["--augment", "shift", "--augment-loss", "rad"]
    shifted = trainHere("--algo", "ppo2", *PIXELS, *short, *rad, "--log-dir", tmp_path / "a")
    with open(os.path.join(shifted, "args.json")) as handle:
        record = json.load(handle)
    assert record["augment"] == "shift" and record["augment_loss"] == "rad"
    assert record.get("hp_clip_range_vf") is None  # (the raw-pixel defaults were measured on unshifted losses)
    model = registered_rl["ppo2"][0].load(os.path.join(shifted, "ppo2_model.zip")).model
    assert isinstance(model.rollout_buffer, AugmentedRolloutBuffer)
    # the offsets come from the generators the run's seed seeds: the same command, the same weights
    again = trainHere("--algo", "ppo2", *PIXELS, *short, *rad, "--log-dir", tmp_path / "c")
    weights = registered_rl["ppo2"][0].load(os.path.join(again, "ppo2_model.zip")).model.policy.state_dict()
    assert all(torch.equal(value, weights[name]) for name, value in model.policy.state_dict().items())
    # continued with --augment none: SB3's own buffer again, and the saved model says so
    plain = trainHere("--algo", "ppo2", *PIXELS, *short, "--load-rl-model-path",
                      os.path.join(shifted, "ppo2_model.zip"), "--log-dir", tmp_path / "b")
    module, keywords = _bufferRecord(os.path.join(plain, "ppo2_model.zip"), "rollout_buffer")
    assert module.startswith("stable_baselines3") and keywords == {}
    assert type(registered_rl["ppo2"][0].load(os.path.join(plain, "ppo2_model.zip")).model.rollout_buffer) \
        is RolloutBuffer


def _policyModel(seed: int, continuous: bool = False) -> PPO:
    """:return: an SB3 PPO on noise images (an MLP policy: small and quick), not trained"""
    actions = spaces.Box(-1.0, 1.0, (2,), np.float32) if continuous else spaces.Discrete(3)
    env = DummyVecEnv([lambda: _ImageEnv(actions)])
    model = PPO("MlpPolicy", env, n_steps=8, batch_size=8, seed=seed, device="cpu")
    model.set_logger(Logger(folder=None, output_formats=[]))
    return model


class _ImageEnv(gym.Env):
    """Noise images, any action, no end: enough for a PPO to be built and take a rollout"""

    observation_space = IMAGES

    def __init__(self, action_space: spaces.Space) -> None:
        self.action_space = action_space

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        return self.observation_space.sample(), 0.0, False, False, {}


def _gradients(policy: torch.nn.Module) -> list[torch.Tensor]:
    return [parameter.grad.clone() for parameter in policy.parameters() if parameter.grad is not None]


def test_drac_adds_the_gradient_of_its_weighted_policy_regulariser_to_the_update_once() -> None:
    def flip(images: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        return images.flip(-1)  # a view unlike the image, the same at every call

    generator = np.random.default_rng(2)
    for continuous in (False, True):
        model = _policyModel(0, continuous)
        policy, coef = model.policy, 0.5
        obs = torch.as_tensor(_randomImages(6, generator))
        actions = torch.as_tensor(np.stack([model.action_space.sample() for _ in range(6)]))
        # what SB3's train does: evaluate, zero the gradients, back-propagate its loss (here the values and
        # log-probabilities), clip, step
        expected = _policyModel(0, continuous).policy
        expected.set_training_mode(True)
        values, log_prob, _ = expected.evaluate_actions(obs, actions)
        target = detachedDistribution(expected.get_distribution(obs).distribution)
        regulariser = actionKL(target, expected.get_distribution(flip(obs)).distribution).mean()
        expected.optimizer.zero_grad()
        (values.sum() + log_prob.sum() + coef * regulariser).backward()
        DrACRegulariser(model, flip, coef)
        policy.set_training_mode(True)
        values, log_prob, _ = policy.evaluate_actions(obs, actions)
        policy.optimizer.zero_grad()
        (values.sum() + log_prob.sum()).backward()
        assert regulariser.item() > 0
        for got, wanted in zip(_gradients(policy), _gradients(expected), strict=True):
            torch.testing.assert_close(got, wanted)
        # once: the next zero_grad clears and adds nothing; outside the update nothing is kept
        policy.optimizer.zero_grad()
        assert not any(parameter.grad is not None and parameter.grad.abs().sum() > 0
                       for parameter in policy.parameters())
        policy.set_training_mode(False)
        policy.evaluate_actions(obs, actions)
        policy.optimizer.zero_grad()
        assert all(parameter.grad is None or parameter.grad.abs().sum() == 0 for parameter in policy.parameters())


def test_ppo2_drac_learns_from_the_rollout_as_collected_with_the_regulariser_on_shifted_views(tmp_path) -> None:
    short = ["--num-timesteps", "64", "--n-steps", "8", "--batch-size", "32", "--n-epochs", "1"]  # x 4 envs
    run = trainHere("--algo", "ppo2", *PIXELS, *short, "--augment", "shift", "--log-dir", tmp_path)
    with open(os.path.join(run, "args.json")) as handle:
        record = json.load(handle)
    # DrAC by default; its losses see the images as rendered, so the raw-pixel defaults apply
    assert record["augment_loss"] == "drac" and record["hp_clip_range_vf"] == "0.2"
    module, keywords = _bufferRecord(os.path.join(run, "ppo2_model.zip"), "rollout_buffer")
    assert module.startswith("stable_baselines3") and keywords == {}
    with open(os.path.join(run, "progress.csv")) as handle:
        rows = list(csv.DictReader(handle))
    kl = [float(row["train/drac_kl"]) for row in rows if row.get("train/drac_kl")]
    assert kl and all(value > 0 for value in kl)  # shifted views the policy acts on otherwise
    # without --augment the flag does nothing: recorded at its default, no regulariser
    plain = trainHere("--algo", "ppo2", *PIXELS, *short, "--augment-loss", "rad", "--log-dir", tmp_path / "plain")
    with open(os.path.join(plain, "args.json")) as handle:
        assert json.load(handle)["augment_loss"] == "drac"
    with open(os.path.join(plain, "progress.csv")) as handle:
        assert "train/drac_kl" not in handle.readline()


def test_an_interrupted_drac_run_resumes_with_its_regulariser_as_the_uninterrupted_run(tmp_path, monkeypatch) -> None:
    """Episodes of 32 steps, so that the checkpoint at 32 falls between two episodes (where a resume is exact): the
    shifts are drawn from torch's generator, which the checkpoint keeps; the regulariser is attached again."""
    monkeypatch.setattr(MobileRobotGymEnv, "MAX_STEPS", 32)
    args = ["--algo", "ppo2", *PIXELS, "--num-timesteps", "96", "--n-steps", "32", "--batch-size", "32", "--n-epochs",
            "1", "--checkpoint-freq", "32", "--augment", "shift", "--seed", "3", "--num-cpu", "1"]  # (episode ends)
    reference = trainHere(*args, "--log-dir", tmp_path / "reference")
    run_dir = interruptThenResume(monkeypatch, str(tmp_path / "stopped"), args, 40)

    def kl(folder: str) -> list[tuple[str, str]]:
        with open(os.path.join(folder, "progress.csv")) as handle:
            return [(row["time/total_timesteps"], row["train/drac_kl"]) for row in csv.DictReader(handle)]

    assert kl(run_dir) == kl(reference) and kl(run_dir)[-1][1]  # the updates after the resume are DrAC's
    resumed, uninterrupted = (registered_rl["ppo2"][0].load(os.path.join(folder, "ppo2_model.zip")).model.policy
                              for folder in (run_dir, reference))
    for name, tensor in uninterrupted.state_dict().items():
        assert torch.equal(resumed.state_dict()[name], tensor), name


def test_an_augmented_run_recorded_before_augment_loss_resumes_as_rad(tmp_path, monkeypatch) -> None:
    """args.json of format 7 has no augment_loss: its augmented ppo2 run learned RAD-style and goes on so."""
    run_dir = interruptedRun(monkeypatch, str(tmp_path), ["--algo", "ppo2", *PIXELS, "--num-timesteps", "96",
                                                          "--n-steps", "32", "--batch-size", "32", "--n-epochs", "1",
                                                          "--checkpoint-freq", "32", "--augment", "shift",
                                                          "--augment-loss", "rad"], 40)
    args_file = os.path.join(run_dir, "args.json")
    with open(args_file) as handle:
        record = json.load(handle)
    del record["augment_loss"]
    record["args_format"] = 7
    with open(args_file, "w") as handle:
        json.dump(record, handle)
    assert train.main(["--resume", run_dir, "--no-vis", "--no-progress"]) == 0
    module, keywords = _bufferRecord(os.path.join(run_dir, "ppo2_model.zip"), "rollout_buffer")
    assert module == AugmentedRolloutBuffer.__module__ and keywords == {"augment": "shift"}
    with open(os.path.join(run_dir, "progress.csv")) as handle:
        assert "train/drac_kl" not in handle.readline()


def test_sac_trains_on_shifted_replay_samples(tmp_path) -> None:
    run = trainHere("--algo", "sac", "-c", *PIXELS, "--num-timesteps", "48", "--learning-starts", "16",
                    "--batch-size", "8", "--buffer-size", "64", "--augment", "shift", "--log-dir", tmp_path)
    module, keywords = _bufferRecord(os.path.join(run, "sac_model.zip"), "replay_buffer")
    assert module == AugmentedReplayBuffer.__module__ and keywords == {"augment": "shift"}


def test_the_algorithms_that_augment_are_those_with_a_buffer_for_it() -> None:
    augmenting = {name for name, (cls, _, _) in registered_rl.items() if cls.augmentsUpdates()}
    assert {"ppo2", "sac", "td3"} <= augmenting
    assert not {"a2c", "her", "ppo_lstm", "deepq", "ars"} & augmenting
    assert issubclass(registered_rl["td3"][0].AUGMENTED_BUFFER, ReplayBuffer)
