"""``--augment shift`` for end-to-end pixel RL: the batches of the updates are shifted views, the stored data is not.

ppo2's minibatches and the replay samples of the replay-buffer algorithms are each a shift (up to 4 pixels, border
repeated) of the image stored at their row, the buffers keep the images as collected, a replay sample's observations
and next observations are shifted independently, the train command gives the algorithms these buffers (and a model
continued with ``--augment none`` SB3's own). The refusals are cases of tests/test_bad_inputs.py.
"""
from __future__ import annotations

import json
import os
import zipfile

import numpy as np
import torch
from conftest import trainHere
from gymnasium import spaces
from stable_baselines3.common.buffers import ReplayBuffer, RolloutBuffer
from torch.nn import functional as F

from rl_baselines.core.registry import registered_rl
from rl_baselines.rl_algorithm.augmented_buffers import AugmentedReplayBuffer, AugmentedRolloutBuffer
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


def test_ppo2_trains_on_shifted_minibatches_the_same_for_a_seed_and_a_continued_run_can_stop(tmp_path) -> None:
    short = ["--num-timesteps", "64", "--n-steps", "32", "--batch-size", "32", "--n-epochs", "1"]
    shifted = trainHere("--algo", "ppo2", *PIXELS, *short, "--augment", "shift", "--log-dir", tmp_path / "a")
    with open(os.path.join(shifted, "args.json")) as handle:
        assert json.load(handle)["augment"] == "shift"
    model = registered_rl["ppo2"][0].load(os.path.join(shifted, "ppo2_model.zip")).model
    assert isinstance(model.rollout_buffer, AugmentedRolloutBuffer)
    # the offsets come from the generators the run's seed seeds: the same command, the same weights
    again = trainHere("--algo", "ppo2", *PIXELS, *short, "--augment", "shift", "--log-dir", tmp_path / "c")
    weights = registered_rl["ppo2"][0].load(os.path.join(again, "ppo2_model.zip")).model.policy.state_dict()
    assert all(torch.equal(value, weights[name]) for name, value in model.policy.state_dict().items())
    # continued with --augment none: SB3's own buffer again, and the saved model says so
    plain = trainHere("--algo", "ppo2", *PIXELS, *short, "--load-rl-model-path",
                      os.path.join(shifted, "ppo2_model.zip"), "--log-dir", tmp_path / "b")
    module, keywords = _bufferRecord(os.path.join(plain, "ppo2_model.zip"), "rollout_buffer")
    assert module.startswith("stable_baselines3") and keywords == {}
    assert type(registered_rl["ppo2"][0].load(os.path.join(plain, "ppo2_model.zip")).model.rollout_buffer) \
        is RolloutBuffer


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
