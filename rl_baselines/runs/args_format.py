"""args.json's format and its upgrade rules: what a run recorded by an earlier version of train reads as.

Light on purpose (no torch, no algorithm): the search's workers and the results tools read records with it before
anything heavy is imported. Invariants: adding a train setting raises :data:`ARGS_FORMAT` by one and records, in
:data:`UPGRADES`, the value of the new setting that reproduces the runs written before (never "the current default":
a default may change later); a setting appears in one rule only, the one of the format that added it.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from srl_toolbox.devices import DEFAULT_RUN_DEVICE

ARGS_FORMAT = 10
ARGS_FORMAT_KEY = "args_format"

# Format n -> n + 1: the settings format n may lack, at the values that reproduce its runs. Format 1 (no args_format
# key) covers every file from the first release (0.1.0) on; the settings added since then, and the run's device
# (0.1.0 trained on the CPU and recorded none).
UPGRADES: dict[int, dict[str, Any]] = {
    1: {"device": DEFAULT_RUN_DEVICE, "force_down": False, "srl_ground_truth_scale": False, "eval_freq": 0,
        "eval_episodes": 5, "latest": False, "srl_log_folder": os.path.join("logs", "srl"), "tensorboard_log": None},
    # format 2 -> 3: --renderer; every earlier run's images were TinyRenderer's
    2: {"renderer": "tinyrenderer"},
    # format 3 -> 4: --features-extractor, a flag of the SB3-backed algorithms (their pixel policy's CNN); every
    # earlier run's was SB3's NatureCNN (the key means nothing to the other algorithms, which have no CNN choice)
    3: {"features_extractor": "nature"},
    # format 4 -> 5: --augment; every earlier run learned from the images as collected
    4: {"augment": "none"},
    # format 5 -> 6: --srl-state-scale; every earlier run handed its learned state over unscaled (or at ground truth's
    # size with --srl-ground-truth-scale, which it recorded)
    5: {"srl_state_scale": "none"},
    # format 6 -> 7: --torch-threads; every earlier run of the train command trained on one torch thread
    6: {"torch_threads": 1},
    # format 7 -> 8: ppo2's --augment-loss; every earlier augmented ppo2 run learned RAD-style, its losses on the
    # shifted views (the key means nothing to the other algorithms, nor without --augment)
    7: {"augment_loss": "rad"},
    # format 8 -> 9: --vec-env; every earlier run of several envs stepped them in worker processes (one env: in the
    # training process, as --vec-env resolves it for one env)
    8: {"vec_env": "subproc"},
    # format 9 -> 10: --precision, a flag of the SB3-backed algorithms; every earlier run's pixel policy computed in
    # float32 (the key means nothing to the other algorithms, nor on a state)
    9: {"precision": "float32"},
}


def addedSettings(record: Mapping[str, Any]) -> dict[str, Any]:
    """
    :param record: train settings of any format, possibly a subset of args.json (as an archive keeps them)
    :return: the settings an upgrade rule (:data:`UPGRADES`) gives that ``record`` lacks, at those values
    """
    return {name: value for rule in UPGRADES.values() for name, value in rule.items() if name not in record}


def withAddedSettings(record: Mapping[str, Any]) -> dict[str, Any]:
    """:return: ``record`` with the settings :func:`addedSettings` gives it (what it recorded kept as it was)"""
    return {**addedSettings(record), **record}
