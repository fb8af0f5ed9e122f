"""Where a run's hyperparameters come from besides its algorithm's flags: ``--hyperparam-file`` and ``--hyperparam``.

Both give ``NAME -> VALUE`` strings, typed afterwards by the algorithm's ``parserHyperParam`` as the command line's
are. The file is a YAML mapping ``name: value`` (what ``hyperparam_search`` and a run's ``hyperparams.yaml`` write),
or rl_zoo3's layout, one such mapping per env id, of which the run's ``--env`` section is read. rl_zoo3's keys that
are not hyperparameters here (``n_envs``, ``policy``, ``lin_`` schedules...) are refused in one line that names the
toolbox's equivalent. rl_zoo3's ``train_freq: [N, "step"]`` (SB3's ``(N, "step")``, which SB3 reads as its int
``train_freq: N``) is read as ``train_freq: N``, in the file and in ``--hyperparam train_freq:[N,step]``; training
every N episodes (``[N, "episode"]``) is not offered here (train_freq counts env steps) and is refused, naming
``train_freq: N``.

Invariant: reading is pure (nothing written), and every bad file is a :class:`UsageError` naming the file.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import yaml

from srl_toolbox.cli import UsageError

if TYPE_CHECKING:  # (an annotation only: gail, which train_config's registry loads, reads files with it)
    from rl_baselines.runs.train_config import TrainConfig

# rl_zoo3's hyperparameter-file keys that are settings of the run here, not hyperparameters: what to give instead
ZOO_KEYS = {
    "n_envs": "--num-cpu {value} (parallel envs)",
    "n_timesteps": "--num-timesteps {value}",
    "policy": "nothing: the policy follows the observation (CnnPolicy for raw_pixels, MlpPolicy for states)",
    "normalize": "nothing: every observation but raw pixels is normalised (a running mean/std, rewards as they are)",
    "frame_stack": "--num-stack {value}",
    "policy_kwargs": "the algorithm's own flags (see --algo NAME --help; ppo2: --features-extractor); rl_zoo3 "
                     "evaluates this string as Python, which the toolbox never does",
    "env_wrapper": "an env plugin (docs/plugins.md)",
    "vec_env_wrapper": "an env plugin (docs/plugins.md)",
    "callback": "a callback given to rl_baselines.api.trainAgent (docs/python_api.md)",
    "env_kwargs": "the env's flags of train (--random-target, --force-down, --img-shape...)",
    "eval_env_kwargs": "the env's flags of train (evaluations use the training env's settings)",
}
_LINEAR = "lin_"
# SB3's train_freq units (rl_zoo3 writes train_freq: [N, unit]); only "step" has an equivalent here (train_freq: N).
TRAIN_FREQ_UNITS = ("step", "episode")
# --hyperparam's spelling of such a pair: [N, step], (N, "episode")...
_TRAIN_FREQ_PAIR = re.compile(r"""[\[(]\s*(-?\d+)\s*,\s*(['"]?)(\w+)\2\s*[\])]""")


def trainFreqSteps(source: str, shown: str, count: Any, unit: Any) -> str:
    """
    rl_zoo3's (SB3's) ``train_freq: [N, unit]`` as the toolbox's ``train_freq`` (env steps between updates).

    :param source: what gave it, as the error starts (``--hyperparam-file 'z.yml'``, ``--hyperparam``)
    :param shown: the value as its source wrote it
    :param count: N
    :param unit: the unit
    :return: N as a string, for unit ``step`` (typed and range-checked afterwards as any value)
    :raises UsageError: unit ``episode`` (per-episode training is not offered), another unit, or N not an integer
    """
    if unit == "episode":
        raise UsageError(f"{source}: train_freq: {shown} trains every {count} episode(s), which is not offered here "
                         f"(train_freq counts env steps); give train_freq: N, the env steps between updates (an "
                         f"episode's length for about one update per episode)")
    if unit != "step" or isinstance(count, bool) or not isinstance(count, int):
        raise UsageError(f"{source}: train_freq: {shown} is not [N, UNIT] with an integer N and UNIT one of "
                         f"{', '.join(TRAIN_FREQ_UNITS)}; give train_freq: N, the env steps between updates")
    return str(count)


def parseHyperparamPairs(items: list[str]) -> dict[str, str]:
    """:param items: ``--hyperparam``'s ``KEY:VALUE`` strings; :return: ``KEY -> VALUE`` (``train_freq:[N,step]``
    as ``N``)
    :raises UsageError: an item that is not ``KEY:VALUE``, train_freq per episode (:func:`trainFreqSteps`), or
        rl_zoo3's keys and schedules that are settings here (every one named with its equivalent)"""
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition(":")
        if not sep or not key or not value:
            raise UsageError(f"--hyperparam {item!r} is not KEY:VALUE (for example n_steps:256)")
        pair = _TRAIN_FREQ_PAIR.fullmatch(value.strip()) if key == "train_freq" else None
        if pair is not None:
            value = trainFreqSteps("--hyperparam", value, int(pair.group(1)), pair.group(3))
        pairs[key] = value
    refusals = [refusal for key, value in pairs.items() if (refusal := _zooRefusal(key, value))]
    if refusals:  # rl_zoo3's -params habits (n_envs:8, learning_rate:lin_0.001), named as the file's are
        raise UsageError(f"--hyperparam: {'; '.join(refusals)}")
    return pairs


def _loadYaml(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as handle:
            return yaml.safe_load(handle)
    except OSError as error:
        raise UsageError(f"--hyperparam-file {path!r}: {error.strerror}") from None
    except yaml.YAMLError as error:
        raise UsageError(f"--hyperparam-file {path!r} is not valid YAML ({str(error).splitlines()[0]})") from None
    except UnicodeDecodeError:
        raise UsageError(f"--hyperparam-file {path!r} is not a text file (not UTF-8): give a YAML file") from None


def _envSection(path: str, content: dict[Any, Any], env_id: str) -> dict[Any, Any]:
    """:return: the ``env_id`` section of an rl_zoo3-style file (every value a mapping)
    :raises UsageError: no section for ``env_id``"""
    if env_id not in content:
        raise UsageError(f"--hyperparam-file {path!r} has no section for {env_id} (it has: "
                         f"{', '.join(map(str, content))})")
    return content[env_id]


def _zooRefusal(key: Any, value: Any) -> str:
    """:return: what the refusal of an rl_zoo3 key that is a setting here (:data:`ZOO_KEYS`), or of an rl_zoo3 linear
        schedule, says, with the toolbox's equivalent; '' for another key"""
    if key in ZOO_KEYS:
        shown = int(value) if isinstance(value, float) and value.is_integer() else value
        return f"{key} is rl_zoo3's, not a hyperparameter; give {ZOO_KEYS[key].format(value=shown)}"
    if isinstance(value, str) and value.startswith(_LINEAR):
        number = value[len(_LINEAR):]
        instead = (f"{key}: {number} and train's --lr-schedule linear" if key == "learning_rate" else
                   f"a number ({key}: {number}): only the learning rate has a schedule here")
        return f"{key}: {value} is rl_zoo3's linear schedule; give {instead}"
    return ""


def readHyperparamFile(path: str, env_id: str) -> dict[str, str]:
    """
    :param path: the YAML file: ``name: value``, or rl_zoo3's ``env id: {name: value}``
    :param env_id: the run's env (the section read from an rl_zoo3-style file)
    :return: ``name -> value`` strings (a float by its repr, every digit kept; YAML's null as ``none``)
    :raises UsageError: unreadable file, another layout, a value that is not a scalar (but train_freq's
        ``[N, "step"]``), or rl_zoo3 keys (every one named, with its equivalent, in the one line)
    """
    content = _loadYaml(path)
    if content is None:
        return {}
    if not isinstance(content, dict):
        raise UsageError(f"--hyperparam-file {path!r} must hold a mapping NAME: VALUE, not {type(content).__name__}")
    if content and all(isinstance(value, dict) for value in content.values()):
        content = _envSection(path, content, env_id)
    refusals = [refusal for key, value in content.items() if (refusal := _zooRefusal(key, value))]
    if refusals:  # all of them, so that an rl_zoo3 entry is mended in one go
        raise UsageError(f"--hyperparam-file {path!r}: {'; '.join(refusals)}")
    pairs: dict[str, str] = {}
    for key, value in content.items():
        if key == "train_freq" and isinstance(value, list) and len(value) == 2:  # rl_zoo3's [N, "step"]
            value = trainFreqSteps(f"--hyperparam-file {path!r}", repr(value), *value)
        if value is None:  # YAML null, as rl_zoo3's files write an unset clip_range_vf: read as the word none
            value = "none"
        if not isinstance(key, str) or not isinstance(value, (bool, int, float, str)):
            raise UsageError(f"--hyperparam-file {path!r}: {key!r}: {value!r} is not NAME: number/string/bool")
        # The strings then go through parserHyperParam like --hyperparam ones (repr keeps every float digit).
        pairs[key] = repr(value) if isinstance(value, float) else str(value)
    return pairs


def hyperparamStrings(args: TrainConfig) -> dict[str, str]:
    """
    :param args: the run's settings (env, hyperparam_file, hyperparam)
    :return: the hyperparameters as NAME -> VALUE strings: --hyperparam-file's, less those an algorithm's own flag
        gives (``--learning-rate``: the flag wins, as it wins over a default), with --hyperparam's over them
    :raises UsageError: unreadable file or malformed KEY:VALUE
    """
    pairs = readHyperparamFile(args.hyperparam_file, args.env) if args.hyperparam_file else {}
    pairs = {name: value for name, value in pairs.items() if args.extra.get(f"hp_{name}") is None}
    pairs.update(parseHyperparamPairs(args.hyperparam))
    return pairs
