"""Packaging for srl-toolbox.

Built-in algorithms and environments are declared as entry points exactly like a third-party plugin's, so the
core never imports them by name (see docs/plugins in DESIGN.md section 3).
"""
from setuptools import find_packages, setup

RL_ALGORITHMS = [
    "a2c = rl_baselines.rl_algorithm.a2c:A2CModel",
    "ppo2 = rl_baselines.rl_algorithm.ppo2:PPO2Model",
    "random_agent = rl_baselines.random_agent:RandomAgentModel",
]
ENVIRONMENTS = [
    "MobileRobotGymEnv-v0 = environments.mobile_robot.mobile_robot_env:MobileRobotGymEnv",
]

setup(
    name="srl-toolbox",
    version="0.1.0",
    description="Robot reinforcement learning and state representation learning toolbox",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(include=["rl_baselines*", "srl_models*", "environments*", "replay*"]),
    package_data={"environments": ["*/urdf/*.urdf"]},
    install_requires=[
        "torch==2.13.0",
        "gymnasium>=1.0",
        "pybullet>=3.2.5",
        "visdom==0.2.4",
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
        "test": ["pytest", "pytest-xdist", "pytest-timeout"],
    },
    entry_points={
        "srl_toolbox.rl_algorithms": RL_ALGORITHMS,
        "srl_toolbox.environments": ENVIRONMENTS,
        "console_scripts": ["srl-visdom = replay.visdom_server:main"],
    },
)
