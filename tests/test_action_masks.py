"""Action masks (sb3-contrib's ``action_masks()``): which envs offer them, and that they tell the truth.

Mobile robots mask the moves that would bump a wall; Kuka arms the moves that the work box's clipping turns into
no-ops. For every env and discrete action mode that offers masks: an allowed action never bumps or stands still, a
masked one does, and at least one action is always allowed.
"""
import numpy as np
import pytest

from environments.registry import getEnvClass, registerAll

MOBILE_ENVS = ["MobileRobotGymEnv-v0", "MobileRobot1DGymEnv-v0", "MobileRobot2TargetGymEnv-v0",
               "MobileRobotLineTargetGymEnv-v0"]
KUKA_ENVS = ["KukaButtonGymEnv-v0", "KukaRandButtonGymEnv-v0", "Kuka2ButtonGymEnv-v0", "KukaMovingButtonGymEnv-v0"]


def test_which_envs_offer_masks():
    offering = {env_id for env_id in registerAll() if getEnvClass(env_id).offersActionMasks()}
    assert set(MOBILE_ENVS) | set(KUKA_ENVS) <= offering
    for env_id in registerAll():
        if "Omnirobot" in env_id or "CarRacing" in env_id:
            assert env_id not in offering, env_id


@pytest.mark.parametrize("env_id", MOBILE_ENVS)
def test_mobile_robot_masks_are_the_bumps(env_id):
    env = getEnvClass(env_id)(srl_model="ground_truth", is_discrete=True, random_target=True, seed=3)
    rng = np.random.default_rng(0)
    try:
        env.reset(seed=3)
        seen_masked = 0
        for _ in range(400):
            mask = env.action_masks()
            assert mask.dtype == bool and mask.shape == (env.action_space.n,) and mask.any()
            masked = np.flatnonzero(~mask)
            if masked.size and rng.random() < 0.3:  # a masked move is a bump: the robot stays
                before = env.getRobotPos().copy()
                _, _, _, truncated, info = env.step(int(rng.choice(masked)))
                assert info["bumped"] and np.allclose(env.getRobotPos(), before)
                seen_masked += 1
            else:
                # push towards the walls so that masks come into play: mostly repeat the first allowed move
                allowed = np.flatnonzero(mask)
                _, _, _, truncated, info = env.step(int(allowed[0] if rng.random() < 0.7 else rng.choice(allowed)))
                assert not info["bumped"]
            if truncated:
                env.reset()
        assert seen_masked > 0
    finally:
        env.close()


@pytest.mark.parametrize("env_id, force_down", [(env, False) for env in KUKA_ENVS] + [("KukaButtonGymEnv-v0", True)])
def test_kuka_masks_are_the_clipped_moves(env_id, force_down):
    env = getEnvClass(env_id)(srl_model="ground_truth", is_discrete=True, seed=1, force_down=force_down)
    try:
        env.reset(seed=1)
        for _ in range(40):  # +x until the work box stops it: then +x is masked and does nothing, -x moves
            mask = env.action_masks()
            assert mask.shape == (6,) and mask.any()
            if not mask[1]:
                break
            env.step(1)
        assert not mask[1] and mask[0]
        x = env._effector_pos[0]
        env.step(1)
        assert env._effector_pos[0] - x < 0.005  # a masked move: the clipped target keeps the effector there
        x = env._effector_pos[0]
        env.step(0)
        assert x - env._effector_pos[0] > 0.005  # an allowed move goes
        for _ in range(30):  # any allowed move, anywhere: at least one is always allowed
            mask = env.action_masks()
            assert mask.any()
            _, _, terminated, truncated, _ = env.step(int(np.flatnonzero(mask)[0]))
            if terminated or truncated:
                env.reset()
    finally:
        env.close()


def test_continuous_actions_have_no_masks():
    env = getEnvClass("MobileRobotGymEnv-v0")(srl_model="ground_truth", is_discrete=False)
    try:
        with pytest.raises(ValueError, match="action masks need discrete actions"):
            env.action_masks()
    finally:
        env.close()
