"""The indefinite article of a name in messages (srl_toolbox.text.withArticle)."""
from __future__ import annotations

import gymnasium as gym
import pytest

from benchmarks.srl_rl.cli import checkEvalFreq
from environments.observation_check import observationProblem
from srl_toolbox.cli import UsageError
from srl_toolbox.text import withArticle


@pytest.mark.parametrize("name, expected", [
    ("OmnirobotEnv-v0", "an OmnirobotEnv-v0"), ("MobileRobotGymEnv-v0", "a MobileRobotGymEnv-v0"),
    ("a2c", "an a2c"), ("acktr", "an acktr"), ("ppo2", "a ppo2"), ("int", "an int"),
    ("list", "a list"), ("'atc'", "an 'atc'"), ("'vae'", "a 'vae'"), ("unit", "a unit"), ("8x8", "an 8x8"),
    ("3x64x64", "a 3x64x64"), ("one-hot", "a one-hot"), ("InvertedPendulum-v4", "an InvertedPendulum-v4"),
])
def test_a_name_gets_the_article_of_its_sound(name, expected):
    assert withArticle(name) == expected


def test_messages_built_around_an_env_id_or_a_type_read_an_before_a_vowel():
    """A message read "the 1000 steps of a OmnirobotEnv-v0 run", "a int, not a numpy array"."""
    with pytest.raises(UsageError, match="1000 steps of an OmnirobotEnv-v0 run: no evaluation"):
        checkEvalFreq(5000, 1000, "OmnirobotEnv-v0 run")
    space = gym.spaces.Box(0.0, 1.0, (2,))
    assert observationProblem(3, space).startswith("an int, not a numpy array"), observationProblem(3, space)
