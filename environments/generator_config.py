"""GeneratorConfig: the one declaration of every setting of ``python -m environments.dataset_generator``.

Each flag is a field declared with :func:`srl_toolbox.settings.setting` (type, default, flag names, parser, help);
``environments.dataset_generator.buildParser`` generates the parser from the fields, and a caller in Python
(``srl_models.prepare``) builds a :class:`GeneratorConfig` directly. ``environments.dataset_generator.validate``
checks either the same way, and ``environments.dataset_generator.generate`` records from it.

Invariants: a flag's name, default and help exist only in its field; ``img_shape`` is a tuple of ints, so a config is
hashable and nothing changes it once built (:func:`dataclasses.replace` makes another).
"""
from __future__ import annotations

import dataclasses

from environments.srl_env import RENDERERS
from srl_toolbox.cli import IMAGE_SIDES, positiveFloat, positiveInt, seedNumber
from srl_toolbox.settings import setting

DEFAULT_ENV = "MobileRobotGymEnv-v0"
# The old generator recorded Kuka episodes with a tighter sphere than the env's own default (0.8).
DEFAULT_MAX_DISTANCE = 0.28
IMAGE_FORMATS = ("jpg", "png")


@dataclasses.dataclass(frozen=True)
class GeneratorConfig:
    """
    The settings of one recording: as given (``GeneratorConfig(env=..., num_episode=4)``, or parsed from the
    command line).
    """

    env: str | None = setting(None, f"registered env id [the --policy run's, else {DEFAULT_ENV}]")
    name: str | None = setting(None, "dataset name, the folder under --save-path [the env id]")
    save_path: str = setting("data/", "folder of the datasets")
    num_episode: int = setting(50, "episodes to record", parse=positiveInt)
    num_cpu: int = setting(1, "worker processes, <= --num-episode", parse=positiveInt)
    seed: int = setting(0, "master seed, 0..2**32-1: episode e always gets the same seed [0]", parse=seedNumber)
    continuous_actions: bool = setting(False, "continuous actions", flags=("-c", "--continuous-actions"))
    action_joints: bool = setting(False, "act in joint space (arms, with -c)", flags=("-joints", "--action-joints"))
    random_target: bool = setting(False, "a new target position every episode", flags=("-r", "--random-target"))
    shape_reward: bool = setting(False, "dense reward: minus the distance to the target")
    img_shape: tuple[int, ...] = setting((3, 64, 64), f"image shape, 3 H W with H, W in {IMAGE_SIDES} [3 64 64]",
                                         parse=positiveInt, nargs=3, metavar=("C", "H", "W"))
    image_format: str = setting("jpg", "image files", choices=IMAGE_FORMATS)
    max_steps: int | None = setting(None, "episode length [the env's own, 250 for the mobile robot]",
                                    parse=positiveInt)
    max_distance: float | None = setting(None, "envs with a max_distance (Kuka): the effector farther than this "
                                         "from the target gets reward -1 (the episode goes on) "
                                         f"[{DEFAULT_MAX_DISTANCE}]", parse=positiveFloat)
    multi_view: bool = setting(False, "envs with a second camera (Kuka): 6-channel images, written as frameN_1 and "
                               "frameN_2")
    fpv: bool = setting(False, "envs with a first-person view (mobile robot): stacked with the top view, like "
                        "--multi-view")
    renderer: str | None = setting(None, "what draws the images: tinyrenderer (PyBullet's, the reference; "
                                   "Omnirobot's and CarRacing's own drawing), sprites (mobile robots: numpy "
                                   "compositing of layers TinyRenderer renders once, faster) or "
                                   "lowpoly (Kuka arms: TinyRenderer with decimated arm meshes, faster, same physics); "
                                   "dataset_config.json records it by name [with --policy RUN the run's; else the env's "
                                   "default: {renderer_defaults}]",
                                   choices=RENDERERS)
    policy: str = setting("random", "'random' (uniform actions) or a run folder of rl_baselines.train to replay")
    force: bool = setting(False, "overwrite an existing dataset / discard an interrupted one of the same name",
                          flags=("-f", "--force"))
    resume: bool = setting(False, "finish an interrupted run of the same settings")
    reward_dist: bool = setting(False, "print the distribution of the rewards")
    no_progress: bool = setting(False, "no progress bar")

    def __post_init__(self) -> None:
        object.__setattr__(self, "img_shape", tuple(self.img_shape))
