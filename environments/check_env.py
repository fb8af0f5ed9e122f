"""``python -m environments.check_env ENV_ID``: check that an env keeps the contract of an srl-toolbox env (an
:class:`environments.srl_env.SRLGymEnv` subclass declared under the ``srl_toolbox.environments`` entry point,
docs/plugins.md "Environments"), the env side of ``python -m rl_baselines.check_plugin``.

The env is built as the toolbox builds it (the class itself, not ``gymnasium.make``, with the keywords of
rl_baselines' env factory: ``srl_model``, ``is_discrete``, the env's default renderer, ``img_shape`` where asked,
``seed``, plus ``max_steps`` to keep episodes short and ``render_mode="rgb_array"``), once for each observation mode
of its ``SRL_MODES`` that it computes itself (``ground_truth``, ``raw_pixels``) and each action kind (discrete,
continuous; a kind whose constructor raises ValueError is not offered: a note), and checked:

1. ``gymnasium.utils.env_checker.check_env`` (gymnasium's own contract, called as it is, with the env's registered
   spec so that it also checks reset determinism and each render mode). Its warnings (:data:`ADVICE`) that give
   advice (a Box bound of +-infinity, an action space that is not [-1, 1], floats equal only approximately under a
   seed) are notes; any other warning is a value of the wrong type (an observation or ``terminated`` flag, a reward,
   a rendered frame) and fails the check, as an exception does;
2. observations fit ``observation_space`` over a few short episodes (every reset and step, not only the first, which
   the training factory checks); rewards are finite numbers, ``terminated``/``truncated`` bools, infos dicts, and
   ``info["is_success"]`` at an episode's end, where present, a bool (the monitor files' success column);
3. where ``ground_truth`` is in ``SRL_MODES``: ``getGroundTruth()`` gives ``getGroundTruthDim()`` finite numbers after
   reset and after each step (in every mode: the dataset generator records it beside the images);
4. ``render()`` in ``rgb_array`` mode gives an (H, W, 3) uint8 image;
5. two fresh envs with the same seed give the same observations and rewards for the same actions; a third, with
   another seed, differs (an env that shows no randomness is a note, not a failure);
6. optional (docs/plugins.md: notes, never failures): ``step`` and ``render`` before ``reset``, and ``reset``,
   ``step``, ``render`` after ``close``, are refused with a one-line exception.

Each check prints one line, ``ok: ...``, ``note: ...`` or ``FAILED: ...`` (on stderr), and the command ends with one
summary line. Exit code 0 when every required check passed, 1 otherwise, 2 for bad input (an unknown env id, named
with the valid ones). Nothing is written.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import re
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils.env_checker import check_env

from environments.observation_check import observationProblem
from environments.registry import getEnvClass, registerAll, rendererKeywords, resolvedRenderer, unknownEnvText
from environments.srl_env import SRLGymEnv
from srl_toolbox.cli import (
    IMAGE_SIDES,
    CLIParser,
    UsageError,
    addSeedArgument,
    checkImageShape,
    positiveInt,
    runCommand,
)

# The observation modes an env computes itself that are checked (the arms' joints modes are left to their own tests).
CHECKED_MODES = ("ground_truth", "raw_pixels")
DEFAULT_EPISODES = 3
DEFAULT_MAX_STEPS = 20
# Parts of gymnasium check_env's warnings that are advice, not a broken API (reported as notes).
ADVICE = ("space minimum value is -infinity", "space maximum value is infinity", "symmetric and normalized space",
          "not equal although similar", "default seed argument", "precision lower than float32")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")

OK, NOTE, FAILED = "ok", "note", "FAILED"


@dataclasses.dataclass(frozen=True)
class Check:
    """One line of the report: ``status`` is ``ok``, ``note`` (optional or informative: never fails the env) or
    ``FAILED`` (a required rule broken); ``text`` names the env's mode and action kind, the check and why."""

    status: str
    text: str

    @property
    def line(self) -> str:
        """:return: the printed line, ``STATUS: text``"""
        return f"{self.status}: {self.text}"


class _Broken(Exception):
    """A required rule broken, with its one-line reason (ends one check, the others go on)."""


def _oneLine(error: BaseException) -> str:
    """:return: an exception as ``Type: first line of its message``"""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}{': ' + text[0] if text else ''}"


def _where(error: BaseException) -> str:
    """:return: an exception in one line and where it was raised: ``Type: message (in function, file:line)``"""
    frames = traceback.extract_tb(error.__traceback__)
    return _oneLine(error) + (f" (in {frames[-1].name}, {os.path.basename(frames[-1].filename)}:{frames[-1].lineno})"
                              if frames else "")


def envKeywords(env_id: str, srl_model: str, is_discrete: bool, seed: int, max_steps: int,
                img_shape: Sequence[int] | None) -> dict[str, Any]:
    """
    :param env_id: a registered env id
    :param srl_model: the observation mode
    :param is_discrete: discrete actions
    :param seed: the ``seed`` keyword
    :param max_steps: the episode length
    :param img_shape: (3, H, W) of camera images, None for the env's default
    :return: the constructor keywords of the checked env: those of rl_baselines' env factory for a run with no
        optional flags (the env's default renderer), plus ``seed``, ``max_steps`` and ``render_mode="rgb_array"``
    """
    keywords: dict[str, Any] = {"srl_model": srl_model, "is_discrete": is_discrete, "random_target": False,
                                "shape_reward": False, **rendererKeywords(resolvedRenderer(None, env_id), env_id),
                                "seed": seed, "max_steps": max_steps, "render_mode": "rgb_array"}
    if img_shape is not None:
        keywords["img_shape"] = tuple(int(side) for side in img_shape)
    return keywords


def _build(env_id: str, keywords: dict[str, Any]) -> SRLGymEnv:
    """:return: the env class built with ``keywords``, its spec that of its id with them (as the env factory sets it,
    so that gymnasium's check_env can make more envs of the same kind)"""
    env = getEnvClass(env_id)(**keywords)
    if env_id in gym.registry:
        env.spec = dataclasses.replace(gym.spec(env_id), kwargs=dict(keywords))
    return env


@contextlib.contextmanager
def _closing(env: SRLGymEnv) -> Iterator[SRLGymEnv]:
    """Give ``env``, closing it at the end (an error of close is left out: it must not hide the check's result)."""
    try:
        yield env
    finally:
        try:
            env.close()
        except Exception:  # noqa: BLE001 (a close that fails must not hide the check's result)
            pass


def checkGymnasium(make: Callable[[], SRLGymEnv]) -> tuple[list[str], list[str]]:
    """
    Run gymnasium's ``check_env`` on a new env.

    :param make: builds the env
    :return: (its advice warnings, its other warnings), each once, without gymnasium's colour and ``WARN:``
    :raises _Broken: check_env raised (its first line)
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with _closing(make()) as env:
            try:
                check_env(env)
            except Exception as error:  # noqa: BLE001 (any exception of check_env is the env's failure)
                raise _Broken(f"gymnasium check_env: {_where(error)}") from None
    messages: list[str] = []
    for warning in caught:
        text = _ANSI.sub("", str(warning.message)).strip()
        if text.startswith("WARN: ") and text[6:] not in messages:
            messages.append(text[6:])
    advice = [text for text in messages if any(part in text for part in ADVICE)]
    return advice, [text for text in messages if text not in advice]


def _resultProblem(result: Any, space: gym.Space) -> str | None:
    """:return: what is wrong with one ``step`` result (observation, reward, flags, info), None if nothing"""
    if not isinstance(result, tuple) or len(result) != 5:
        return f"step returned {type(result).__name__}, not (observation, reward, terminated, truncated, info)"
    observation, reward, terminated, truncated, info = result
    problem = observationProblem(observation, space)
    if problem is not None:
        return f"the observation of step() does not fit observation_space: {problem}"
    if isinstance(reward, (bool, np.bool_)) or not isinstance(reward, (int, float, np.integer, np.floating)) \
            or not math.isfinite(float(reward)):
        return f"step() gave the reward {reward!r} ({type(reward).__name__}), not a finite number"
    for name, flag in (("terminated", terminated), ("truncated", truncated)):
        if not isinstance(flag, (bool, np.bool_)):
            return f"step() gave {name} {flag!r} ({type(flag).__name__}), not a bool"
    if not isinstance(info, dict):
        return f"step() gave the info {type(info).__name__}, not a dict"
    return None


def _groundTruthProblem(env: SRLGymEnv, when: str) -> str | None:
    """:return: how ``getGroundTruth()`` does not give ``getGroundTruthDim()`` finite numbers, None if it does"""
    dim = env.getGroundTruthDim()
    state = np.asarray(env.getGroundTruth())
    if state.size != dim or state.ndim != 1:
        return f"getGroundTruth() {when} has shape {state.shape}, getGroundTruthDim() says {dim} numbers"
    if state.dtype.kind not in "biuf" or not np.all(np.isfinite(state)):
        return f"getGroundTruth() {when} gave {state.tolist()} ({state.dtype}), not {dim} finite numbers"
    return None


def checkEpisodes(env: SRLGymEnv, episodes: int, seed: int, ground_truth: bool) -> tuple[str, str | None]:
    """
    Play ``episodes`` short episodes with sampled actions.

    :param env: a new env (closed by the caller)
    :param episodes: how many episodes
    :param seed: the first reset's seed and the action sampler's
    :param ground_truth: also check ``getGroundTruth()`` after each reset and step
    :return: (what was checked, in words; a note on episodes that did not end within max_steps, None if they did)
    :raises _Broken: the first broken rule (an observation, reward, flag or info of the wrong kind, a ground truth of
        the wrong size, ``info["is_success"]`` not a bool at an episode's end)
    """
    space = env.observation_space
    env.action_space.seed(seed)
    steps, successes, unended = 0, 0, 0
    for episode in range(episodes):
        observation, info = env.reset(seed=seed if episode == 0 else None)
        problem = observationProblem(observation, space)
        if problem is not None:
            raise _Broken(f"the observation of reset() (episode {episode + 1}) does not fit observation_space: "
                          f"{problem}")
        if not isinstance(info, dict):
            raise _Broken(f"reset() gave the info {type(info).__name__}, not a dict")
        if ground_truth and (problem := _groundTruthProblem(env, "after reset()")) is not None:
            raise _Broken(problem)
        for step in range(env.max_steps + 1):
            result = env.step(env.action_space.sample())
            steps += 1
            problem = _resultProblem(result, space)
            if problem is not None:
                raise _Broken(f"{problem} (episode {episode + 1}, step {step + 1})")
            if ground_truth and (problem := _groundTruthProblem(env, f"after step {step + 1}")) is not None:
                raise _Broken(problem)
            _, _, terminated, truncated, info = result
            if terminated or truncated:
                if "is_success" in info:
                    if not isinstance(info["is_success"], (bool, np.bool_)):
                        raise _Broken(f"info['is_success'] at the end of episode {episode + 1} is "
                                      f"{info['is_success']!r} ({type(info['is_success']).__name__}), not a bool")
                    successes += 1
                break
        else:
            unended += 1
    note = None if not unended else (f"{unended} of {episodes} episodes did not end within max_steps="
                                     f"{env.max_steps} steps (the max_steps keyword sets the episode length)")
    success = f"is_success a bool at {successes} episode ends" if successes else "no info['is_success'] (optional)"
    return (f"observations fit {space} over {episodes} episodes ({steps} steps); rewards, flags and infos of the "
            f"right kinds; {success}{'; ground truth of getGroundTruthDim() numbers' if ground_truth else ''}"), note


def checkRender(env: SRLGymEnv) -> str:
    """
    :param env: an env reset at least once, made with ``render_mode="rgb_array"``
    :return: the image's shape and dtype, in words
    :raises _Broken: ``render()`` did not give an (H, W, 3) uint8 image
    """
    try:
        image = env.render()
    except Exception as error:  # noqa: BLE001 (no render, or one that fails: the env's failure)
        raise _Broken(f"render() in rgb_array mode raised {_where(error)}") from None
    if not isinstance(image, np.ndarray):
        raise _Broken(f"render() in rgb_array mode gave {type(image).__name__}, not an (H, W, 3) uint8 image")
    if image.ndim != 3 or image.shape[2] != 3 or min(image.shape) < 1 or image.dtype != np.uint8:
        raise _Broken(f"render() in rgb_array mode gave {image.dtype} {image.shape}, not an (H, W, 3) uint8 image")
    return f"render() in rgb_array mode gives {image.dtype} {image.shape}"


def _play(env: SRLGymEnv, seed: int, actions: Sequence[Any]) -> list[tuple[Any, float]]:
    """:return: the observations of ``reset(seed=seed)`` and of ``actions`` (until the episode ends), with rewards"""
    observation, _ = env.reset(seed=seed)
    played: list[tuple[Any, float]] = [(observation, 0.0)]
    for action in actions:
        observation, reward, terminated, truncated, _ = env.step(action)
        played.append((observation, float(reward)))
        if terminated or truncated:
            break
    return played


def _same(first: list[tuple[Any, float]], second: list[tuple[Any, float]]) -> bool:
    def flat(value: Any) -> list[np.ndarray]:
        if isinstance(value, dict):
            return [array for key in sorted(value) for array in flat(value[key])]
        return [np.asarray(value)]

    return len(first) == len(second) and all(
        reward_a == reward_b and all(np.array_equal(a, b) for a, b in zip(flat(obs_a), flat(obs_b), strict=True))
        for (obs_a, reward_a), (obs_b, reward_b) in zip(first, second, strict=True))


def _refusal(call: Callable[[], Any], what: str) -> str | None:
    """:return: how ``call`` was not refused with a one-line RuntimeError (or gymnasium error), None when it was"""
    try:
        call()
    except NotImplementedError as error:
        return f"{what} failed inside ({_oneLine(error)}) instead of refusing"
    except (RuntimeError, gym.error.Error) as error:
        lines = str(error).strip().splitlines()
        return None if len(lines) == 1 else f"{what} raised {type(error).__name__} of {len(lines)} lines, not one"
    except Exception as error:  # noqa: BLE001 (an env that fails inside instead of refusing)
        return f"{what} failed inside ({_oneLine(error)}) instead of refusing"
    return f"{what} was not refused"


def checkSeed(make: Callable[[int], SRLGymEnv], seed: int, steps: int) -> tuple[Check, Check | None]:
    """
    Play the same actions on three new envs: two with ``seed``, one with another seed. The third also checks the
    optional lifecycle rules (step and render before reset, reset, step and render after close).

    :param make: builds a new env with a ``seed`` keyword
    :param seed: the seed
    :param steps: the actions played (an episode's end stops them earlier)
    :return: (the seed check: ok, or a note where another seed gives the same episode; the lifecycle note, None when
        every call was refused in one line)
    :raises _Broken: the same seed gave different observations or rewards
    """
    other = seed + 1
    runs = []
    actions: list[Any] = []
    for _ in range(2):
        with _closing(make(seed)) as env:
            if not actions:
                env.action_space.seed(seed)
                actions = [env.action_space.sample() for _ in range(steps)]
            runs.append(_play(env, seed, actions))
    if not _same(runs[0], runs[1]):
        raise _Broken(f"two new envs reset with seed {seed} give different observations or rewards for the same "
                      f"actions (draw every random number from self.np_random, which reset(seed=...) reseeds)")
    with _closing(make(other)) as env:
        refused = [_refusal(lambda: env.step(actions[0]), "step() before reset()"),
                   _refusal(env.render, "render() before reset()")]
        runs.append(_play(env, other, actions))
        env.close()
        refused += [_refusal(lambda: env.reset(seed=other), "reset() after close()"),
                    _refusal(lambda: env.step(actions[0]), "step() after close()"),
                    _refusal(env.render, "render() after close()")]
    problems = [problem for problem in refused if problem is not None]
    lifecycle = None if not problems else Check(NOTE, "; ".join(problems) + " (optional: start step and render with "
                                                "self._checkOpen, docs/plugins.md)")
    if _same(runs[0], runs[2]):
        return Check(NOTE, f"seed {seed} repeats its episode; seed {other} gives the same one (no randomness seen: "
                           f"fine for a deterministic env)"), lifecycle
    return Check(OK, f"seed {seed} repeats its observations and rewards, seed {other} differs"), lifecycle


def checkKind(env_id: str, srl_model: str, is_discrete: bool, *, seed: int = 0, episodes: int = DEFAULT_EPISODES,
              max_steps: int = DEFAULT_MAX_STEPS, img_shape: Sequence[int] | None = None) -> list[Check]:
    """
    Every check of one observation mode and action kind.

    :param env_id: a registered env id
    :param srl_model: an observation mode of the env's SRL_MODES
    :param is_discrete: discrete (True) or continuous (False) actions
    :param seed: the seed
    :param episodes: episodes of the observation check
    :param max_steps: the episodes' length
    :param img_shape: (3, H, W), None for the env's default
    :return: the checks' lines; a first line ``note: ... not offered`` alone where the constructor refuses the kind
        with a ValueError
    """
    kind = "discrete" if is_discrete else "continuous"
    label = f"{srl_model}, {kind}"

    def make(env_seed: int = seed) -> SRLGymEnv:
        return _build(env_id, envKeywords(env_id, srl_model, is_discrete, env_seed, max_steps, img_shape))

    try:
        make().close()
    except ValueError as error:
        return [Check(NOTE, f"{label}: not offered (the constructor refuses it: {_oneLine(error)})")]
    except Exception as error:  # noqa: BLE001 (a constructor that fails otherwise is the env's failure)
        return [Check(FAILED, f"{label}: the constructor failed: {_oneLine(error)}")]
    checks: list[Check] = []

    def run(check: Callable[[], list[Check]]) -> None:
        try:
            checks.extend(check())
        except _Broken as error:
            checks.append(Check(FAILED, f"{label}: {error}"))
        except Exception as error:  # noqa: BLE001 (the env raised: the check fails, the others go on)
            checks.append(Check(FAILED, f"{label}: raised {_where(error)}"))

    def gymnasiumCheck() -> list[Check]:
        advice, broken = checkGymnasium(make)
        if broken:
            raise _Broken(f"gymnasium check_env warned: {broken[0]}" + (f" (and {len(broken) - 1} more)"
                                                                         if len(broken) > 1 else ""))
        return [Check(OK, f"{label}: gymnasium check_env passed"),
                *(Check(NOTE, f"{label}: gymnasium check_env advises: {text}") for text in advice)]

    def episodesCheck() -> list[Check]:
        ground_truth = "ground_truth" in getEnvClass(env_id).SRL_MODES
        with _closing(make()) as env:
            text, note = checkEpisodes(env, episodes, seed, ground_truth)
            return [Check(OK, f"{label}: {text}"), *([Check(NOTE, f"{label}: {note}")] if note else []),
                    Check(OK, f"{label}: {checkRender(env)}")]

    def seedCheck() -> list[Check]:
        same, lifecycle = checkSeed(make, seed, max_steps)
        return [dataclasses.replace(same, text=f"{label}: {same.text}"),
                *([dataclasses.replace(lifecycle, text=f"{label}: {lifecycle.text}")] if lifecycle else [])]

    for check in (gymnasiumCheck, episodesCheck, seedCheck):
        run(check)
    return checks


def checkEnv(env_id: str, *, seed: int = 0, episodes: int = DEFAULT_EPISODES, max_steps: int = DEFAULT_MAX_STEPS,
             img_shape: Sequence[int] | None = None, report: Callable[[Check], None] | None = None) -> list[Check]:
    """
    Check a registered env (see the module docstring); use it in an env plugin's tests::

        def test_contract():
            assert not [check.line for check in checkEnv("MyEnv-v0", img_shape=(3, 32, 32)) if check.status == FAILED]

    :param env_id: a registered env id
    :param seed: the seed of the envs and of the sampled actions
    :param episodes: episodes played for the observation check
    :param max_steps: the episodes' length (the ``max_steps`` keyword)
    :param img_shape: (3, H, W) of camera images, None for the env's default
    :param report: called with each check as it is done (e.g. to print it)
    :return: every check, in order; the env keeps the contract when none has status FAILED
    :raises UsageError: the id is not registered (one line naming the valid ones), or ``img_shape`` is not
        (3, H, W) with H, W in the commands' bounds (the command's ``--img-shape`` check)
    """
    if env_id not in registerAll():
        raise UsageError(unknownEnvText(env_id).replace("--env ", "env id ", 1))
    if img_shape is not None:
        img_shape = tuple(img_shape)
        if len(img_shape) != 3:
            raise UsageError(f"img_shape {' '.join(map(str, img_shape))} is not 3 H W with H, W in {IMAGE_SIDES}")
        checkImageShape(img_shape, flag="img_shape")
    modes = [mode for mode in CHECKED_MODES if mode in getEnvClass(env_id).SRL_MODES]
    checks: list[Check] = []
    if not modes:
        checks.append(Check(FAILED, f"SRL_MODES {getEnvClass(env_id).SRL_MODES} has none of "
                                    f"{', '.join(CHECKED_MODES)}"))
        if report is not None:
            report(checks[-1])
    offered = 0
    for mode in modes:
        for is_discrete in (True, False):
            found = checkKind(env_id, mode, is_discrete, seed=seed, episodes=episodes, max_steps=max_steps,
                              img_shape=img_shape)
            offered += not (len(found) == 1 and found[0].status == NOTE)  # (else the one "not offered" note)
            for check in found:
                checks.append(check)
                if report is not None:
                    report(check)
    if modes and not offered:
        checks.append(Check(FAILED, "the constructor refuses both discrete and continuous actions"))
        if report is not None:
            report(checks[-1])
    return checks


def main(argv: Sequence[str] | None = None) -> int:
    """
    :param argv: command-line arguments (default: sys.argv[1:])
    :return: 0 when every required check passed, 1 when one failed
    :raises UsageError: bad input: an unknown env id, a bad image shape (exit code 2)
    """
    parser = CLIParser(prog="python -m environments.check_env",
                       description="Check that an env keeps the srl-toolbox env contract: gymnasium's check_env, "
                                   "observations, ground truth, render, seeding, for each observation mode and "
                                   "action kind it offers.")
    parser.add_argument("env_id", help="a registered env id")
    parser.add_argument("--img-shape", type=int, nargs=3, default=None, metavar=("C", "H", "W"),
                        help="camera image shape [the env's default]")
    parser.add_argument("--episodes", type=positiveInt, default=DEFAULT_EPISODES,
                        help=f"episodes played for the observation check [{DEFAULT_EPISODES}]")
    parser.add_argument("--max-steps", type=positiveInt, default=DEFAULT_MAX_STEPS,
                        help=f"episode length (the env's max_steps keyword) [{DEFAULT_MAX_STEPS}]")
    addSeedArgument(parser, help="seed of the envs and of the sampled actions [0]")
    args = parser.parse_args(argv)
    if args.img_shape is not None:
        checkImageShape(args.img_shape)  # (named as the flag; checkEnv names its keyword)

    def show(check: Check) -> None:
        print(check.line, flush=True, **({"file": sys.stderr} if check.status == FAILED else {}))

    checks = checkEnv(args.env_id, seed=args.seed, episodes=args.episodes, max_steps=args.max_steps,
                      img_shape=args.img_shape, report=show)
    failed = sum(check.status == FAILED for check in checks)
    if failed:
        print(f"{args.env_id}: {failed} check{'s' if failed > 1 else ''} failed", file=sys.stderr)
        return 1
    print(f"{args.env_id}: every required check passed")
    return 0


if __name__ == "__main__":
    runCommand(main)
