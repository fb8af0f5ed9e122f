"""Packaging for srl-toolbox.

Built-in algorithms and environments are declared as entry points exactly like a third-party plugin's, so the
core never imports them by name (see docs/architecture.md and docs/plugins.md).
"""
import re

from setuptools import find_packages, setup


def readVersion() -> str:
    """
    :return: ``__version__`` of srl_toolbox/__init__.py, the one place the version is written (read, not imported)
    """
    with open("srl_toolbox/__init__.py", encoding="utf-8") as handle:
        return re.search(r'^__version__ = "([^"]+)"$', handle.read(), re.MULTILINE).group(1)


RL_ALGORITHMS = [
    "a2c = rl_baselines.rl_algorithm.a2c:A2CModel",
    "acer = rl_baselines.rl_algorithm.acer:ACERModel",
    "acktr = rl_baselines.rl_algorithm.acktr:ACKTRModel",
    "ars = rl_baselines.evolution_strategies.ars:ARSModel",
    "cma-es = rl_baselines.evolution_strategies.cma_es:CMAESModel",
    "ddpg = rl_baselines.rl_algorithm.ddpg:DDPGModel",
    "deepq = rl_baselines.rl_algorithm.deepq:DQNModel",
    "gail = rl_baselines.rl_algorithm.gail:GAILModel",
    "her = rl_baselines.rl_algorithm.her:HERModel",
    "maskable_ppo = rl_baselines.rl_algorithm.maskable_ppo:MaskablePPOModel",
    "ppo1 = rl_baselines.rl_algorithm.ppo1:PPO1Model",
    "ppo2 = rl_baselines.rl_algorithm.ppo2:PPO2Model",
    "ppo_lstm = rl_baselines.rl_algorithm.ppo_lstm:PPOLSTMModel",
    "qrdqn = rl_baselines.rl_algorithm.qrdqn:QRDQNModel",
    "random_agent = rl_baselines.rl_algorithm.random_agent:RandomAgentModel",
    "sac = rl_baselines.rl_algorithm.sac:SACModel",
    "td3 = rl_baselines.rl_algorithm.td3:TD3Model",
    "tqc = rl_baselines.rl_algorithm.tqc:TQCModel",
    "trpo = rl_baselines.rl_algorithm.trpo:TRPOModel",
]
ENVIRONMENTS = [
    "CarRacingGymEnv-v0 = environments.car_racing.car_env:CarRacingGymEnv",
    "Kuka2ButtonGymEnv-v0 = environments.kuka.kuka_2button_env:Kuka2ButtonGymEnv",
    "KukaButtonGymEnv-v0 = environments.kuka.kuka_button_env:KukaButtonGymEnv",
    "KukaMovingButtonGymEnv-v0 = environments.kuka.kuka_moving_button_env:KukaMovingButtonGymEnv",
    "KukaRandButtonGymEnv-v0 = environments.kuka.kuka_rand_button_env:KukaRandButtonGymEnv",
    "MobileRobot1DGymEnv-v0 = environments.mobile_robot.mobile_robot_1D_env:MobileRobot1DGymEnv",
    "MobileRobot2TargetGymEnv-v0 = environments.mobile_robot.mobile_robot_2target_env:MobileRobot2TargetGymEnv",
    "MobileRobotGymEnv-v0 = environments.mobile_robot.mobile_robot_env:MobileRobotGymEnv",
    "MobileRobotLineTargetGymEnv-v0 = environments.mobile_robot.mobile_robot_line_target_env:MobileRobotLineTargetGymEnv",
    "OmnirobotEnv-v0 = environments.omnirobot.omnirobot_env:OmnirobotEnv",
]

# Observation modes the envs compute themselves are listed too, so --srl-model has one table of names.
SRL_MODELS = [
    "ground_truth = srl_models.base:EnvironmentSRLModel",
    "joints = srl_models.base:EnvironmentSRLModel",
    "joints_position = srl_models.base:EnvironmentSRLModel",
    "raw_pixels = srl_models.base:EnvironmentSRLModel",
    "atc = srl_models.models:ATCModel",
    "autoencoder = srl_models.models:AutoEncoderModel",
    "curl = srl_models.models:CURLModel",
    "dae = srl_models.models:DAEModel",
    "forward = srl_models.models:ForwardModel",
    "inverse = srl_models.models:InverseModel",
    "pca = srl_models.pca:PCAModel",
    "random = srl_models.models:RandomModel",
    "reward = srl_models.models:RewardModel",
    "robotic_priors = srl_models.models:RoboticPriorsModel",
    "srl_combination = srl_models.models:SRLCombinationModel",
    "srl_splits = srl_models.models:SRLSplitsModel",
    "supervised = srl_models.models:SupervisedModel",
    "vae = srl_models.models:VAEModel",
]

setup(
    name="srl-toolbox",
    version=readVersion(),
    description="Robot reinforcement learning and state representation learning toolbox",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(include=["srl_toolbox*", "rl_baselines*", "srl_models*", "environments*", "replay*"]),
    package_data={"environments": ["*/urdf/*.urdf", "kuka/lowpoly/*"]},
    install_requires=[
        # A range, so that installing the toolbox keeps a user's own (e.g. CUDA) build of torch; the Makefile installs
        # the exact CPU build the tests run with. The floor is what stable-baselines3 2.9 requires.
        "torch>=2.8,<3",
        "gymnasium[box2d]>=1.0",
        "pybullet>=3.2.5",
        "visdom==0.2.4",
        # tornado 6.6 refuses the ../user/style.css link of visdom 0.2.4's page (HTTP 403 for the whole page of
        # `python -m visdom.server`); tests/test_visdom.py checks that page.
        "tornado>=6.1,<6.6",
        "filelock>=3.12",
        "numpy",
        "pyyaml",
        "stevedore>=5",
        "scipy",
        "cma",
        "opencv-python-headless",
        "stable-baselines3>=2.3",
        "sb3-contrib>=2.3",
        "matplotlib",
        "tqdm",
        "pillow",
    ],
    extras_require={
        "test": ["pytest", "pytest-xdist", "pytest-timeout", "optuna>=3", "ray>=2.9", "tensorboard>=2.10",
                 # make lint (run by make test): ruff.toml and the .importlinter contracts
                 "ruff>=0.6", "import-linter>=2"],
        "search": ["optuna>=3"],
        "tensorboard": ["tensorboard>=2.10"],
        "ray": ["ray>=2.9"],
        # make profile (benchmarks.profile_runs): samples of every process of a training run
        "profile": ["py-spy>=0.3"],
    },
    entry_points={
        "srl_toolbox.rl_algorithms": RL_ALGORITHMS,
        "srl_toolbox.environments": ENVIRONMENTS,
        "srl_toolbox.srl_models": SRL_MODELS,
        # environments.dataset_generator --policy RUN loads a trained agent through this name (environments never
        # imports rl_baselines).
        "srl_toolbox.policy_loaders": ["run = rl_baselines.runs.run_policy:loadRunPolicy"],
        "console_scripts": ["srl-visdom = replay.visdom_server:main"],
    },
)
