"""A plugin without saveTrainingState, installed at test time (tests/tiny_plugin_algo.py as ``tiny``): what a plugin
author meets through the commands. A stopped run says how to go on (--load-rl-model-path), --resume points there
too and leaves a finished run alone, a saved model is refused for another action or observation space before
anything is written, check_plugin passes it and catches each broken rule, and a broken sibling plugin imported from
Python costs one warning line. The commands with the plugin installed fork from a warm interpreter started with its
PYTHONPATH (conftest.siteInterpreter), as fresh processes with that environment would run; those about a broken
plugin's warnings run in real processes."""
from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from conftest import REPO, childProcesses, docsExample, freshProcesses, runFolder, runModule, siteInterpreter, snapshot

GROUND_TRUTH = ("--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth")
VARIANTS = {"tiny": "TinyAgent", "tiny_mkstemp": "MkstempAgent", "tiny_nonorm": "NoNormalisationAgent",
            "tiny_frozen": "FrozenNormalisationAgent", "tiny_noisy": "NoisyAgent", "tiny_loadnone": "LoadNoneAgent",
            "tiny_onebatch": "OneActionAgent", "tiny_runcheck": "RunCheckAgent", "tiny_recurrent": "RecurrentAgent",
            "tiny_leaky": "LeakyRecurrentAgent"}


@pytest.fixture(scope="module")
def tinySite(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A folder for PYTHONPATH holding the installed ``tiny_plugin`` distribution (package and dist-info)."""
    site = tmp_path_factory.mktemp("tiny_site")
    package = site / "tiny_plugin"
    package.mkdir()
    (package / "__init__.py").write_text("")
    shutil.copy(os.path.join(REPO, "tests", "tiny_plugin_algo.py"), package / "algo.py")
    dist_info = site / "tiny_plugin-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: tiny-plugin\nVersion: 0.1\n")
    (package / "docs_example.py").write_text(docsExample())
    (package / "docs_crossq.py").write_text(docsExample("### Wrapping an SB3 or sb3-contrib algorithm"))
    (package / "docs_crossq_quick.py").write_text(  # (from its 50th step, small batches, every 8 steps: quick)
        "import dataclasses\n\nfrom tiny_plugin.docs_crossq import CrossQModel\n\n\n"
        "class QuickCrossQ(CrossQModel):\n"
        "    HYPERPARAMS = {**CrossQModel.HYPERPARAMS,\n"
        "                   **{name: dataclasses.replace(CrossQModel.HYPERPARAMS[name], default=value)\n"
        "                      for name, value in (('learning_starts', 50), ('batch_size', 16), ('train_freq', 8))}}\n")
    (package / "docs_silent.py").write_text("from tiny_plugin.docs_example import TinyAgent\n\n\n"
                                            "class SilentAgent(TinyAgent):\n    TRAINING_ROWS = True\n")
    shutil.copy(os.path.join(REPO, "tests", "plugin_v1_docs_example.py"), package / "docs_example_v1.py")
    (dist_info / "entry_points.txt").write_text(
        "[srl_toolbox.rl_algorithms]\n" + "".join(f"{name} = tiny_plugin.algo:{cls}\n" for name, cls in VARIANTS.items())
        + "docs_tiny = tiny_plugin.docs_example:TinyAgent\ndocs_tiny_v1 = tiny_plugin.docs_example_v1:TinyAgent\n"
        + "docs_silent = tiny_plugin.docs_silent:SilentAgent\ndocs_crossq = tiny_plugin.docs_crossq:CrossQModel\n"
        + "docs_crossq_quick = tiny_plugin.docs_crossq_quick:QuickCrossQ\n")
    return str(site)


def _env(site: str) -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join(filter(None, [REPO, site, os.environ.get("PYTHONPATH")]))}


Command = Callable[..., subprocess.CompletedProcess]


@pytest.fixture(scope="module")
def tinyRun(tinySite: str) -> Iterator[Command]:
    """``tinyRun(MODULE, *ARGS)``: ``python -m MODULE ARGS`` with tinySite installed (forked from a warm interpreter
    started with its PYTHONPATH)."""
    interpreter = siteInterpreter(_env(tinySite))

    def run(module: str, *args, **kwargs) -> subprocess.CompletedProcess:
        return runModule(module, *args, env=_env(tinySite), interpreter=interpreter, **kwargs)

    run.interpreter = interpreter  # its running command is its child process
    yield run
    interpreter.stop()


def _train(run: Command, *args: str) -> subprocess.CompletedProcess:
    return run("rl_baselines.train", "--no-vis", "--no-progress", *GROUND_TRUTH, *args)


def _python(run: Command, folder, code: str) -> subprocess.CompletedProcess:
    """``python -c CODE`` with tinySite installed (the code as a module ``probe`` in ``folder``, run from there)."""
    os.makedirs(folder)
    with open(os.path.join(folder, "probe.py"), "w", encoding="utf-8") as handle:
        handle.write(code)
    return run("probe", cwd=str(folder))


@pytest.fixture(scope="module")
def finishedTinyRun(tmp_path_factory: pytest.TempPathFactory, tinyRun: Command) -> str:
    """A tiny run that finished its 300 steps (tests only read it)."""
    done = _train(tinyRun, "--algo", "tiny", "--num-timesteps", "300", "--log-dir", tmp_path_factory.mktemp("done"))
    assert done.returncode == 0, done.stderr
    return runFolder(done)


@pytest.mark.slow
def test_stopped_run_points_at_load_rl_model_path_and_resume_agrees(tmp_path, tinySite, tinyRun) -> None:
    """A run stopped by SIGTERM (exit 143; the command forked from tinyRun's warm interpreter, as a fresh process
    would run it) prints the command that continues its model; --resume refuses it naming the same command."""
    log_dir = str(tmp_path / "logs")
    command = ["rl_baselines.train", "--no-vis", "--no-progress", "--algo", "tiny", *GROUND_TRUTH, "--num-timesteps",
               "100000000", "--checkpoint-freq", "200", "--log-dir", log_dir, "--hyperparam", "step_size:0.01"]
    finished: list[subprocess.CompletedProcess] = []
    running = threading.Thread(target=lambda: finished.append(tinyRun(*command, timeout=240)))
    running.start()
    try:
        deadline = time.monotonic() + 120
        while "checkpoints" not in str(list(os.walk(log_dir))) and time.monotonic() < deadline:
            assert running.is_alive(), finished
            time.sleep(0.1)
        time.sleep(0.5)
        [(pid, _)] = childProcesses(tinyRun.interpreter.process.pid)
        os.kill(pid, signal.SIGTERM)
    finally:
        running.join(timeout=240)
    [stopped] = finished
    output = stopped.stdout + stopped.stderr
    assert stopped.returncode == 143, output
    run_dir = runFolder(subprocess.CompletedProcess([], 0, output, ""))
    assert "--resume" not in output
    line = next(line for line in output.splitlines() if "continue its model with: " in line)
    continuation = shlex.split(line.split("continue its model with: ", 1)[1])
    model = os.path.join(run_dir, "tiny_model.json")
    assert continuation[-2:] == ["--load-rl-model-path", model] and "--hyperparam" in continuation

    # --resume refuses in one line that names the same continuation, and changes nothing
    before = snapshot(run_dir)
    refused = tinyRun("rl_baselines.train", "--resume", run_dir)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "cannot be resumed" in refused.stderr and f"--load-rl-model-path {model}" in refused.stderr
    assert snapshot(run_dir) == before
    # a sweep starts such a run again in a new folder instead of calling --resume
    status = _python(tinyRun, tmp_path / "status", f"from rl_baselines.runs.resume import runStatus\n"
                                                   f"print(runStatus({run_dir!r}))\n")
    assert status.stdout.strip() == "continue", status.stderr

    # the printed command works (with a small budget instead of the rest of 1e8 steps)
    index = continuation.index("--num-timesteps")
    continuation[index + 1] = "300"
    more = tinyRun(*continuation[2:], "--no-vis", "--no-progress")
    assert more.returncode == 0, more.stderr
    assert runFolder(more) != run_dir


@pytest.mark.slow
def test_resume_leaves_a_finished_run_alone(tinyRun, finishedTinyRun) -> None:
    run_dir = finishedTinyRun
    before = snapshot(run_dir)
    again = tinyRun("rl_baselines.train", "--resume", run_dir)
    assert again.returncode == 0 and "Already finished (300 steps)" in again.stdout, again.stderr
    assert snapshot(run_dir) == before


@pytest.mark.slow
def test_other_action_or_observation_space_refused_before_writing(tmp_path, tinyRun, finishedTinyRun) -> None:
    model = os.path.join(finishedTinyRun, "tiny_model.json")
    log_dir = tmp_path / "second"
    for flags, message in ((("-c",), "was trained with discrete actions, this run has continuous actions "
                                     "(drop -c/--continuous-actions)"),
                           (("--num-stack", "2"), "was trained with another observation space")):
        refused = _train(tinyRun, "--algo", "tiny", "--num-timesteps", "200", "--log-dir", log_dir,
                         "--load-rl-model-path", model, *flags)
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
        assert message in refused.stderr
        assert not os.path.exists(log_dir)
    # the same check holds for a built-in algorithm
    ppo = _train(tinyRun, "--algo", "ppo2", "--num-timesteps", "64", "--hyperparam", "n_steps:64", "batch_size:32",
                 "n_epochs:1", "--log-dir", tmp_path / "ppo")
    assert ppo.returncode == 0, ppo.stderr
    refused = _train(tinyRun, "--algo", "ppo2", "-c", "--num-timesteps", "64", "--log-dir", log_dir,
                     "--load-rl-model-path", os.path.join(runFolder(ppo), "ppo2_model.zip"))
    assert refused.returncode == 2 and "discrete actions, this run has continuous" in refused.stderr
    assert not os.path.exists(log_dir)


def test_check_plugin_passes_the_plugin_of_the_docs(tinyRun) -> None:
    result = tinyRun("rl_baselines.check_plugin", "docs_tiny", "--num-timesteps", "200")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok: discrete: same seed, same model" in result.stdout
    assert "continuous: --load-rl-model-path continues the step count and the normalisation" in result.stdout
    assert "docs_tiny: every check passed" in result.stdout


def test_check_plugin_passes_a_plugin_whose_parser_checks_whole_commands(tinyRun) -> None:
    result = tinyRun("rl_baselines.check_plugin", "tiny_runcheck", "--num-timesteps", "200", "--discrete-actions",
                     "--no-seed-check")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "tiny_runcheck: every check passed" in result.stdout


@pytest.mark.parametrize("algo, flags", [("tiny_recurrent", ["--discrete-actions"]), ("tiny_recurrent", ["-c"]),
                                         ("ppo_lstm", ["-c"])])
def test_check_plugin_passes_a_recurrent_policy(tinyRun, algo, flags) -> None:
    """A recurrent policy's deterministic actions are compared at episode starts (``dones`` True), where its state
    restarts: ppo_lstm's continuous actions, carried on from the LSTM state of the previous call, failed the check."""
    result = tinyRun("rl_baselines.check_plugin", algo, *flags, "--num-timesteps", "300", "--no-seed-check")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{algo}: every check passed" in result.stdout


def test_a_plugins_help_is_titled_with_its_algo_name(tinyRun) -> None:
    """The help section of a plugin's flags said "TinyAgent hyperparameters", its Python class, where a built-in's
    says its --algo name; a registered subclass of it has its own name too."""
    for algo in ("docs_tiny", "docs_silent"):
        result = tinyRun("rl_baselines.train", "--algo", algo, "--help")
        assert result.returncode == 0, result.stderr
        assert f"{algo} hyperparameters (defaults in brackets)" in result.stdout, result.stdout
        assert "TinyAgent" not in result.stdout and "SilentAgent" not in result.stdout


def test_a_plugin_written_from_the_docs_of_api_version_1_trains_replays_and_continues(tmp_path, tinyRun) -> None:
    """The example of docs/plugins.md before API version 2 (tests/plugin_v1_docs_example.py), unchanged: the train
    command runs it through the v1 adapter, enjoy_baselines replays it, check_plugin passes it."""
    script = ("from rl_baselines.core.registry import registered_rl\n"
              "from rl_baselines.core.plugin_v1 import isV1\n"
              "print(registered_rl['docs_tiny_v1'][0].API_VERSION, isV1(registered_rl['docs_tiny_v1'][0]), "
              "isV1(registered_rl['docs_tiny'][0]))\n")
    versions = _python(tinyRun, tmp_path / "versions", script)
    assert versions.stdout.split() == ["2", "True", "False"], versions.stderr  # v1 by its train's signature
    trained = _train(tinyRun, "--algo", "docs_tiny_v1", "--num-timesteps", "300", "--log-dir", tmp_path / "logs")
    assert trained.returncode == 0, trained.stderr
    run_dir = runFolder(trained)
    assert os.path.isfile(os.path.join(run_dir, "docs_tiny_v1_model.json"))
    replay = tinyRun("replay.enjoy_baselines", "--log-dir", run_dir, "--num-timesteps", "50", "--deterministic")
    assert replay.returncode == 0, replay.stderr
    result = tinyRun("rl_baselines.check_plugin", "docs_tiny_v1", "--num-timesteps", "200", "--discrete-actions")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "docs_tiny_v1: every check passed" in result.stdout


def test_the_docs_sb3_wrapper_passes_check_plugin_and_refuses_raw_pixels(tmp_path, tinyRun) -> None:
    """docs/plugins.md's wrapper of sb3-contrib's CrossQ, as written (here learning from its 50th step, logging
    after 4 episodes): check_plugin
    passes it (training, saving, resuming, replaying); raw pixels, which CrossQ has no policy for, are refused in one
    line, nothing written."""
    result = tinyRun("rl_baselines.check_plugin", "docs_crossq_quick", "--num-timesteps", "1100",
                     "--continuous-actions", "--no-seed-check")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "docs_crossq_quick: every check passed" in result.stdout
    pixels = tinyRun("rl_baselines.train", "--algo", "docs_crossq", "-c", "--env", "MobileRobotGymEnv-v0",
                     "--srl-model", "raw_pixels", "--no-vis", "--log-dir", tmp_path / "logs")
    assert pixels.returncode == 2 and pixels.stderr == (
        "error: --srl-model raw_pixels: --algo docs_crossq learns with CrossQ, which has no CnnPolicy (no policy on "
        "images); give it a state: ground_truth or a learned SRL model\n"), pixels.stderr
    assert not os.path.exists(tmp_path / "logs")


@pytest.mark.parametrize("algo, message", [
    ("tiny_mkstemp", "has permissions 0o600"),
    ("tiny_nonorm", "save wrote no vecnormalize.npz"),
    ("tiny_frozen", "normalisation statistics stopped updating"),
    ("tiny_noisy", "deterministic=True) gives different actions"),
    ("tiny_leaky", "deterministic=True) gives different actions"),  # its memory ignores the episode starts
    ("tiny_loadnone", "LoadNoneAgent.load returned NoneType, not an agent: load must return the loaded model"),
    ("tiny_onebatch", "for a batch of 2 observations getAction gave int64 of shape (1,), expected 2 integer actions"),
    ("docs_silent", "TRAINING_ROWS is True but train wrote no training rows to progress.csv"),  # it logs nothing
])
def test_check_plugin_catches_each_trap(tinyRun, algo, message) -> None:
    result = tinyRun("rl_baselines.check_plugin", algo, "--discrete-actions", "--num-timesteps", "200",
                  "--no-seed-check")
    assert result.returncode == 1 and message in result.stderr, result.stdout + result.stderr
    assert result.stderr.strip().count("\n") == 0 and result.stderr.startswith("FAILED: ")


@pytest.mark.slow
def test_check_plugin_from_python_and_bad_input(tmp_path, tinyRun) -> None:
    runs = tmp_path / "runs"
    script = ("from rl_baselines.check_plugin import checkPlugin, PluginCheckError\n"
              "passed = checkPlugin('tiny', continuous=True, num_timesteps=200, check_seed=False,\n"
              f"                     folder={str(runs)!r})\n"
              "print(len(passed))\n"
              "try:\n"
              "    checkPlugin('tiny_noisy', continuous=False, num_timesteps=200, check_seed=False)\n"
              "except PluginCheckError as error:\n"
              "    print('caught', error)\n")
    result = tinyRun("rl_baselines.check_plugin", "no_such_algo")
    assert result.returncode == 2 and "unknown algorithm 'no_such_algo'; valid choices:" in result.stderr
    result = tinyRun("rl_baselines.check_plugin", "tiny", "--srl-model", "nope", "--keep", tmp_path / "kept")
    assert result.returncode == 2 and result.stderr.startswith("error: unknown --srl-model 'nope'")
    assert not (tmp_path / "kept").exists()
    result = tinyRun("rl_baselines.check_plugin", "deepq", "-c", "--keep", tmp_path / "kept")
    assert result.returncode == 2 and result.stderr.startswith("error: -c: deepq declares discrete actions only")
    assert not (tmp_path / "kept").exists()
    runs.mkdir()
    result = _python(tinyRun, tmp_path / "script", script)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert int(lines[0]) == 7 and lines[1].startswith("caught discrete: getAction(deterministic=True)")
    assert os.listdir(runs)  # the runs are kept in the given folder


def test_broken_sibling_plugin_from_python_is_one_warning_line(tmp_path, tinySite) -> None:
    dist_info = tmp_path / "broken_sibling-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-sibling\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text("[srl_toolbox.rl_algorithms]\nbroken_sibling = no_such_module_xyz:A\n")
    env = {"PYTHONPATH": os.pathsep.join([_env(tinySite)["PYTHONPATH"], str(tmp_path)])}
    script = "from tiny_plugin.algo import TinyAgent\nfrom rl_baselines.core.registry import registered_rl\n" \
             "print('tiny' in registered_rl)"
    # check_plugin on the skipped plugin says why it was skipped in its error line too
    result, checked = freshProcesses(env, ("-c", script, [], tmp_path),
                                     ("-m", "rl_baselines.check_plugin", ["broken_sibling"], REPO))
    assert result.returncode == 0 and result.stdout.strip() == "True", result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert "PluginLoadWarning: skipped algorithm plugin 'broken_sibling'" in result.stderr
    assert ".py" not in result.stderr
    error_line = checked.stderr.strip().splitlines()[-1]
    assert checked.returncode == 2, checked.stderr
    assert error_line.startswith("error: unknown algorithm 'broken_sibling'"), checked.stderr
    assert "plugins that failed to load: broken_sibling (no_such_module_xyz:A: ModuleNotFoundError" in error_line


def test_a_broken_plugin_is_one_warning_also_with_env_worker_processes(tmp_path) -> None:
    # each SubprocVecEnv worker (forkserver) imported the registries again and repeated the warning after "Run folder:"
    dist_info = tmp_path / "broken_env-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-env\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text("[srl_toolbox.environments]\nBrokenEnv-v0 = no_such_module_xyz:Env\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}
    result = subprocess.run([sys.executable, "-m", "rl_baselines.train", "--algo", "ppo2", "--env", "MobileRobotGymEnv-v0",
                             "--srl-model", "ground_truth", "--num-cpu", "2", "--num-timesteps", "64", "--n-steps", "32",
                             "--batch-size", "32", "--no-vis", "--no-progress", "--log-dir", str(tmp_path / "logs")],
                            capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("skipped environment plugin 'BrokenEnv-v0'") == 1, result.stderr


def test_a_load_that_returns_no_agent_is_one_line_in_the_commands(tmp_path, tinyRun) -> None:
    trained = _train(tinyRun, "--algo", "tiny_loadnone", "--num-timesteps", "200", "--log-dir", str(tmp_path))
    assert trained.returncode == 0, trained.stderr
    run = runFolder(trained)
    for module, *args in (("replay.enjoy_baselines", "--log-dir", run, "--num-timesteps", "20"),
                          ("rl_baselines.train", "--no-vis", *GROUND_TRUTH, "--algo", "tiny_loadnone",
                           "--log-dir", str(tmp_path / "more"), "--load-rl-model-path",
                           os.path.join(run, "tiny_loadnone_model.json"))):
        result = tinyRun(module, *args)
        assert result.returncode == 1, result.stdout + result.stderr
        assert result.stderr.strip().splitlines() == [
            "error: tiny_plugin.algo.LoadNoneAgent.load returned NoneType, not an agent: load must return the loaded "
            "model (an instance of the class)"], result.stderr
    assert not os.path.exists(tmp_path / "more")
