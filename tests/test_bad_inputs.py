"""Every command of the project, driven with bad inputs as a user would type them: each must exit with code 2, print
one line on stderr (``error: ...``) that names the problem, show no traceback, and change no file under the log,
data and model folders that already exist.

The cases and their categories are in tests/bad_input_cases.py (CASES, CATEGORIES): unknown names, wrong types and
ranges, missing / corrupt / foreign files, incompatible combinations, outputs in the way, read-only folders, a busy
port and a broken plugin. The expensive
inputs (a trained run, two tiny datasets, three tiny SRL models) are made once and only for the cases that use them;
most cases stop during argument checking.
"""
from __future__ import annotations

import collections
import os
import re
import shutil
import socket
import subprocess
from contextlib import ExitStack, contextmanager

import numpy as np
import pytest
from bad_input_cases import (
    AGGREGATE,
    BROKEN_PLUGIN,
    CASES,
    CATEGORIES,
    COMPARE,
    DEFAULTS,
    ENJOY,
    EVALUATE,
    FUSIONER,
    GATHER,
    GENERATOR,
    LATENT,
    PIPELINE,
    PLOTS,
    READ_ONLY_NAME,
    REAL_PROCESS_CASES,
    SEARCH,
    SRL_TRAIN,
    TRAIN,
    VISDOM,
    WARNINGS_ALLOWED,
    XFAIL,
)
from conftest import runModule, snapshot

from replay.visdom_server import findFreePort
from rl_baselines.runs.train import createRunFolder
from rl_baselines.runs.train_checks import baseParser
from srl_models.train import trainFromArgs

pytestmark = pytest.mark.slow  # whole trainings or sweeps: left out of `make test-fast`


# --- the inputs ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The module's own folders: data/ (datasets), logs/srl (SRL models), bad_files/ (corrupt inputs)."""
    root = tmp_path_factory.mktemp("bad_inputs_world")
    bad = root / "bad_files"
    bad.mkdir()
    (bad / "garbage.zip").write_bytes(b"this is not a model" * 10)
    (bad / "corrupt.yaml").write_text("n_steps: [64\nlearning_rate: 0.1\n")
    (bad / "binary.yaml").write_bytes(b"n_steps: 64\n\x8c\xff\xfe: 2\n")  # not UTF-8 (it was a traceback)
    (bad / "cg_damping.yaml").write_text("cg_damping: 0.2\n")  # trpo's, not gail's default learner's
    (bad / "zoo_n_envs.yaml").write_text("MobileRobotGymEnv-v0:\n  n_envs: 8\n  n_steps: 64\n")
    (bad / "zoo_huge_buffer.yaml").write_text("MobileRobotGymEnv-v0:\n  buffer_size: 1e14\n")  # beyond any memory
    (bad / "zoo_train_freq_episode.yaml").write_text("MobileRobotGymEnv-v0:\n  train_freq: [1, \"episode\"]\n")
    (bad / "zoo_other_env.yaml").write_text("KukaButtonGymEnv-v0:\n  n_steps: 64\n")
    (bad / "visdom").mkdir()
    (bad / "folder.gif").mkdir()  # a folder where an output file goes
    (bad / "dangling").symlink_to(root / "unmounted_scratch")  # a link to a folder that is not there
    x = np.arange(5, dtype=float)
    np.savez(bad / "curves.npz", x=x, y=np.stack([x, x + 1]), label=np.array("ppo2"), env=np.array("env"),
             x_label=np.array("episodes"))
    for window in (2, 3):  # training curves smoothed over different episode windows
        np.savez(bad / f"window{window}.npz", x=x, y=np.stack([x, x + 1]), label=np.array("ppo2"),
                 env=np.array("env"), x_label=np.array("episodes"), episode_window=np.array(window))
    np.savez(bad / "foreign.npz", weights=np.zeros(3))
    evaluated = root / "evaluated_only" / "run"  # a finished run with evaluations and no finished training episode
    (evaluated / "monitor").mkdir(parents=True)
    (evaluated / "args.json").write_text('{"env": "MobileRobotGymEnv-v0", "srl_model": "ground_truth", "algo": "ppo2", '
                                         '"seed": 0, "num_timesteps": 200}')
    (evaluated / "monitor" / "0.monitor.csv").write_text('#{"t_start": 1700000000.0, "env_id": "E"}\nr,l,t\n')
    (evaluated / "done.json").write_text("{}")
    np.savez(evaluated / "evaluations.npz", timesteps=np.array([100, 200]), results=np.zeros((2, 1)),
             ep_lengths=np.full((2, 1), 250))
    (root / READ_ONLY_NAME).mkdir()
    return {"root": str(root), "bad": str(bad), "data": str(root / "data"), "srl": str(root / "logs" / "srl"),
            "ro": str(root / READ_ONLY_NAME), "evaluated": str(root / "evaluated_only")}


@pytest.fixture(scope="module")
def datasets(world: dict[str, str]) -> dict[str, str]:
    """Three tiny datasets (2 episodes of 20 steps, 32x32): MobileRobot, its twin (the same settings and seed: the
    same episodes) and, to be foreign, MobileRobot1D."""
    folders = {}
    for key, env_id in (("tiny", "MobileRobotGymEnv-v0"), ("twin", "MobileRobotGymEnv-v0"),
                        ("other", "MobileRobot1DGymEnv-v0")):
        result = runModule(GENERATOR, "--env", env_id, "--name", key, "--save-path", world["data"], "--num-episode",
                           "2", "--max-steps", "20", "--img-shape", "3", "32", "32", "--no-progress")
        assert result.returncode == 0, result.stderr
        folders[key] = os.path.join(world["data"], key)
    return folders


@pytest.fixture(scope="module")
def srlModels(world: dict[str, str], datasets: dict[str, str]) -> dict[str, str]:
    """An autoencoder (one epoch), a PCA and a random encoder made from the tiny dataset; damaged copies of them and
    a copy of the autoencoder to make read-only."""
    # trained in this process: no interpreter start and import per model
    common = ["--data-folder", datasets["tiny"], "--log-folder", world["srl"], "--no-eval", "--no-progress"]
    ae = trainFromArgs([*common, "--srl-model", "autoencoder", "--state-dim", "4", "--epochs", "1", "--batch-size",
                        "16", "--val-split", "0"])
    pca = trainFromArgs([*common, "--srl-model", "pca", "--state-dim", "2"])
    random = trainFromArgs([*common, "--srl-model", "random", "--state-dim", "2"])
    damaged = os.path.join(world["root"], "damaged_srl")
    for name, source, file_name, cut in (("corrupt_config", ae, "exp_config.json", 0.5),
                                         ("truncated_weights", ae, "srl_model.pt", 0.5),
                                         ("empty_weights", ae, "srl_model.pt", 0.0),
                                         ("truncated_pca", pca, "srl_model.npz", 0.5)):
        copy = os.path.join(damaged, name)
        shutil.copytree(source, copy)
        _truncate(os.path.join(copy, file_name), cut)
    read_only = os.path.join(damaged, "read_only_model")
    shutil.copytree(ae, read_only)
    return {"ae": ae, "pca": pca, "random": random, "srlbad": damaged, "roae": read_only}


def _truncate(path: str, keep: float) -> None:
    with open(path, "rb") as handle:
        content = handle.read()
    with open(path, "wb") as handle:
        handle.write(content[: int(len(content) * keep)])


@pytest.fixture(scope="module")
def badRuns(world: dict[str, str], trainedRun: str) -> dict[str, str]:
    """The trained run and damaged copies of it: truncated model, corrupt args.json, an uninstalled algorithm, no
    best model, one to make read-only; plus a truncated model file."""
    runs = os.path.join(world["root"], "damaged_runs")
    with open(os.path.join(trainedRun, "ppo2_model.zip"), "rb") as handle:
        model = handle.read()
    with open(os.path.join(world["bad"], "truncated.zip"), "wb") as handle:
        handle.write(model[: len(model) // 2])
    for name in ("corrupt_args", "truncated_model", "foreign_algo", "no_best", "read_only_run"):
        shutil.copytree(trainedRun, os.path.join(runs, name))
    _truncate(os.path.join(runs, "corrupt_args", "args.json"), 0.5)
    _truncate(os.path.join(runs, "truncated_model", "ppo2_model.zip"), 0.5)
    args_path = os.path.join(runs, "foreign_algo", "args.json")
    with open(args_path, encoding="utf-8") as handle:
        text = handle.read()
    assert '"algo": "ppo2"' in text
    with open(args_path, "w", encoding="utf-8") as handle:
        handle.write(text.replace('"algo": "ppo2"', '"algo": "not_installed_algo"'))
    shutil.rmtree(os.path.join(runs, "no_best", "best"))
    log_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(trainedRun))))
    return {"run": trainedRun, "log": log_root, "runs": runs, "rorun": os.path.join(runs, "read_only_run")}


@pytest.fixture(scope="module")
def brokenPlugin(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A folder for PYTHONPATH with an installed distribution whose algorithm entry point names a missing module.

    A fresh folder each session: stevedore caches entry points under a key made of the path's modification times.
    """
    site = tmp_path_factory.mktemp("broken_plugin_site")
    dist_info = site / "broken_algo_plugin-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-algo-plugin\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text(
        f"[srl_toolbox.rl_algorithms]\n{BROKEN_PLUGIN} = no_such_module_for_srl_toolbox.algo:Algo\n")
    return str(site)


# --- making a folder read-only, even for root ----------------------------------------------------------------------


def _lockFolder(folder: str) -> str | None:
    """
    Make ``folder`` refuse new entries: chmod 0o555, or for root (whom permissions do not stop) the immutable
    attribute, which :func:`readOnly` always removes again (a folder left immutable could not be deleted).

    :return: None when done, else why it cannot be done here
    """
    if os.geteuid() != 0:
        os.chmod(folder, 0o555)
        return None
    chattr = shutil.which("chattr")
    if chattr is None:
        return "running as root, whom chmod does not stop, and chattr is not installed"
    result = subprocess.run([chattr, "+i", folder], capture_output=True, text=True)
    if result.returncode != 0:
        return f"running as root, whom chmod does not stop, and chattr +i failed: {result.stderr.strip()}"
    return None


def _unlockFolder(folder: str) -> None:
    if os.geteuid() == 0:
        subprocess.run([shutil.which("chattr") or "chattr", "-i", folder], capture_output=True)
    else:
        os.chmod(folder, 0o755)


@contextmanager
def readOnly(folder: str):
    """Within the block, ``folder`` cannot be written (the case is skipped where that cannot be arranged)."""
    reason = _lockFolder(folder)
    if reason is not None:
        pytest.skip(reason)
    try:
        probe = os.path.join(folder, "probe")
        try:
            open(probe, "w").close()
        except OSError:
            pass
        else:
            os.remove(probe)
            pytest.skip("the folder stayed writable after locking it")
        yield
    finally:
        _unlockFolder(folder)


@contextmanager
def busyPort():
    """A port on loopback that a listening socket holds for the block."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        yield sock.getsockname()[1]


# --- the checks ------------------------------------------------------------------------------------------------


def assertOneLineError(result: subprocess.CompletedProcess, words: list[str], warnings_allowed: bool = False) -> str:
    """
    Exit code 2, no traceback, and stderr is one ``error: ...`` line holding every word (with
    ``warnings_allowed``, one-line ``warning: ...`` lines may come before it).

    :return: the error line
    """
    output = f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert result.returncode == 2, output
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout, output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("error: "), output
    others = lines[:-1]
    if warnings_allowed:
        assert all(line.startswith("warning: ") for line in others), output
    else:
        assert not others, output
    for word in words:
        assert word in lines[-1], f"{word!r} not in {lines[-1]!r}"
    return lines[-1]


def _fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    assert "{" not in text or "}" not in text, f"unfilled placeholder in {text!r}"
    return text


@pytest.mark.parametrize("case_id,module,arguments,words", [
    pytest.param(*case, id=case[0], marks=[pytest.mark.xfail(strict=True, reason=XFAIL[case[0]])] if case[0] in XFAIL
                 else []) for case in CASES])
def test_bad_input(case_id: str, module: str, arguments: list[str], words: list[str], request, world, badRuns):
    """Each bad command: exit code 2, one ``error:`` line naming the problem, no traceback, no file changed (the
    command forked from the warm interpreter where it runs there as in a fresh process, conftest.runModule)."""
    _checkCase(case_id, module, arguments, words, request, world, badRuns, warm=True)


@pytest.mark.parametrize("case_id", REAL_PROCESS_CASES)
def test_bad_input_in_a_real_process(case_id: str, request, world, badRuns):
    """A few cases again as real ``python -m`` processes (interpreter start included)."""
    (case,) = [case for case in CASES if case[0] == case_id]
    _checkCase(*case, request, world, badRuns, warm=False)


def _checkCase(case_id: str, module: str, arguments: list[str], words: list[str], request, world, badRuns,
               warm: bool) -> None:
    values = {"bad": world["bad"], "data": world["data"], "ro": world["ro"], "evaluated": world["evaluated"], **badRuns}
    text = " ".join([*DEFAULTS.get(module, []), *arguments, *words])
    if any(key in text for key in ("{tiny}", "{twin}", "{other}")):
        values.update(request.getfixturevalue("datasets"))
    if any(key in text for key in ("{ae}", "{pca}", "{random}", "{srlbad}", "{roae}")):
        values.update(request.getfixturevalue("datasets"), **request.getfixturevalue("srlModels"))
    env = {}
    if case_id == "train-broken-plugin":
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [request.getfixturevalue("brokenPlugin"),
                                                          os.environ.get("PYTHONPATH")]))
    if case_id in ("enjoy-render-without-display", "enjoy-render-with-video-without-display"):
        env["DISPLAY"] = ""
    folders = [world["root"], badRuns["log"]]  # every log, data and model folder that exists
    with _environment(case_id, text, values):
        argv = [_fill(arg, values) for arg in [*DEFAULTS.get(module, []), *arguments]]
        before = {folder: snapshot(folder) for folder in folders}
        result = runModule(module, *argv, env=env, warm=warm)
        after = {folder: snapshot(folder) for folder in folders}
    assertOneLineError(result, [_fill(word, values) for word in words], case_id in WARNINGS_ALLOWED)
    assert after == before, "a bad command changed files on disk"
    assert not os.path.exists(os.path.join(world["bad"], "merged")), "the fusioner wrote a destination"


@contextmanager
def _environment(case_id: str, text: str, values: dict[str, str]):
    """The case's surroundings: a port in use, a free one (so that a server's case does not depend on the default
    port being free), read-only folders."""
    with ExitStack() as stack:
        if "{port}" in text:
            values["port"] = str(stack.enter_context(busyPort()))
        if "{free_port}" in text:
            values["free_port"] = str(findFreePort())
        for key in ("ro", "rorun", "roae"):
            if "{" + key + "}" in text:
                stack.enter_context(readOnly(values[key]))
        yield


def test_cases_cover_every_command_and_category():
    """At least 40 distinct cases, every command at least three times, each case in exactly one category."""
    ids = [case[0] for case in CASES]
    assert len(set(ids)) == len(ids) >= 40
    per_command = collections.Counter(case[1] for case in CASES)
    assert set(per_command) == {TRAIN, PIPELINE, SEARCH, ENJOY, GENERATOR, FUSIONER, SRL_TRAIN, EVALUATE, LATENT,
                                PLOTS, GATHER, AGGREGATE, COMPARE, VISDOM}
    assert min(per_command.values()) >= 3, per_command
    categorised = [case_id for members in CATEGORIES.values() for case_id in members]
    assert sorted(categorised) == sorted(ids)
    assert all(CATEGORIES.values())
    assert set(XFAIL) <= set(ids) and WARNINGS_ALLOWED <= set(ids) and set(REAL_PROCESS_CASES) <= set(ids)


def test_the_reliability_page_counts_the_cases_there_are():
    """docs/reliability.md's total, category table and per-command line are those of CASES (they had drifted)."""
    with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "reliability.md"),
              encoding="utf-8") as handle:
        page = handle.read()
    assert f"with {len(CASES)} distinct bad inputs" in page
    assert f"the suite has {len(CASES)} bad-input" in page
    table = page[page.index("| category | cases |"):page.index("Per command:")]
    documented = {name: int(count) for name, count in re.findall(r"^\| ([a-z ,-]+?) \| (\d+) \|", table, re.MULTILINE)}
    assert documented == {name.split(" (")[0]: len(members) for name, members in CATEGORIES.items()}
    line = re.search(r"^Per command: (.*?)\.$", page, re.MULTILINE | re.DOTALL).group(1)
    per_command = {name: int(count) for name, count in re.findall(r"([a-z_.]+) (\d+)", line)}
    # the page names a command by its module's last part, but srl_models.train (train is rl_baselines')
    counted = collections.Counter(case[1] if case[1] == SRL_TRAIN else case[1].rsplit(".", 1)[-1] for case in CASES)
    assert per_command == dict(counted)


def test_existing_run_folder_is_never_reused(tmp_path, trainedRun):
    """Two runs started in the same second get two folders: nothing already on disk is overwritten."""
    args = baseParser().parse_args(["--log-dir", str(tmp_path), "--tag", "same"])
    first, second = createRunFolder(args), createRunFolder(args)
    assert first != second and os.path.isdir(first) and os.path.isdir(second)
