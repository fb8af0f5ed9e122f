"""The benchmark commands (``python -m benchmarks.X``) answer bad input the project's way: one ``error:`` line naming
the bad value (and the valid choices), exit code 2, no traceback, nothing written; their ``--help`` opens with a whole
sentence; env_speed's env draws with TinyRenderer, as its bare PyBullet loop does; srl_table --quick, which writes
nothing, gives no advice about its removed folders."""
from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import subprocess

import pytest
from conftest import REPO, runModule, snapshot

import benchmarks
from benchmarks import env_speed, env_start, srl_table
from benchmarks.env_family import familyBenchmarkMain
from environments.mobile_robot.mobile_robot_env import MobileRobotGymEnv
from srl_toolbox.cli import UsageError

MISSING_RUN = os.path.join(REPO, "no_such_run_folder")

# renderer_gtc's smallest run: a refusal that came after the datasets again would keep the test short
GTC_SMALL = ["--envs", "MobileRobotGymEnv-v0", "--episodes", "2", "--max-steps", "20", "--epochs", "1", "--seeds", "0",
             "--num-cpu", "1", "--jobs", "1", "--no-append"]
# (module, bad arguments, words the error line must hold): each refused at argument parsing, before any work.
CASES = [
    ("env_speed", ["--env", "Nope-v0"], ["'Nope-v0'", "MobileRobotGymEnv-v0", "MobileRobotLineTargetGymEnv-v0"]),
    ("env_speed", ["--seconds", "0"], ["--seconds", "'0'", "positive"]),
    ("env_speed", ["--seconds", "-1"], ["--seconds", "'-1'", "positive"]),
    # an empty --results-file appended to docs/benchmarks.md, the file it keeps trial results out of
    ("env_speed", ["--results-file", ""], ["--results-file ''", "is empty"]),
    ("env_start", ["--envs", "1"], ["--envs", "'1'", "2..256"]),
    ("env_start", ["--repeats", "0"], ["--repeats", "'0'"]),
    ("all_envs_speed", ["Nope-v0"], ["'Nope-v0'", "MobileRobotGymEnv-v0", "KukaButtonGymEnv-v0"]),
    ("all_envs_speed", ["--seconds", "0"], ["--seconds", "'0'"]),
    ("render_speed", ["--env", "Nope-v0"], ["'Nope-v0'", "MobileRobotGymEnv-v0", "KukaButtonGymEnv-v0"]),
    ("render_speed", ["--states", "0"], ["--states", "'0'"]),
    ("render_speed", ["--repeats", "0"], ["--repeats", "'0'"]),
    ("kuka_speed", ["--env", "MobileRobotGymEnv-v0"], ["'MobileRobotGymEnv-v0'", "KukaButtonGymEnv-v0"]),
    ("kuka_speed", ["--seconds", "0"], ["--seconds", "'0'"]),
    ("dataset_speed", ["--repeats", "-1"], ["--repeats", "'-1'"]),
    ("shared_cores", ["--steps", "100"], ["--steps 100", "128"]),
    ("shared_cores", ["--variants", "three-spin"], ["--variants", "'three-spin'", "alone-passive", "two-one-thread"]),
    ("dataset_speed", ["--episodes", "0"], ["--episodes", "'0'"]),
    ("dataset_speed", ["--episodes", "1"], ["--episodes 1", "at least 2"]),
    ("train_speed", ["--repeats", "0"], ["--repeats", "'0'"]),
    ("train_speed", ["--steps", "0"], ["--steps", "'0'"]),
    ("train_speed", ["--learning-budget", "-5"], ["--learning-budget", "'-5'"]),
    ("train_speed", ["--learning-budget", "10"], ["--learning-budget 10", "250"]),
    ("kuka_ppo_speed", ["--repeats", "0"], ["--repeats", "'0'"]),
    ("kuka_ppo_speed", ["--steps", "0"], ["--steps", "'0'"]),
    ("device_speed", ["--steps", "0"], ["--steps", "'0'"]),
    ("device_speed", ["--warm-up-steps", "-5"], ["--warm-up-steps", "'-5'"]),
    ("sweep_speed", ["--runs", "0"], ["--runs", "'0'"]),
    ("sweep_speed", ["--steps", "-5"], ["--steps", "'-5'"]),
    ("sweep_speed", ["--repeats", "0"], ["--repeats", "'0'"]),
    ("sweep_layout", ["--runs", "0"], ["--runs", "'0'"]),
    ("sweep_layout", ["--observations", "vae"], ["--observations", "'vae'", "ground_truth", "raw_pixels"]),
    ("profile_runs", ["--steps", "0"], ["--steps", "'0'"]),
    ("profile_runs", ["--rate", "0"], ["--rate", "'0'"]),
    ("masked_moves", [MISSING_RUN], [MISSING_RUN, "not a folder"]),
    ("masked_moves", [REPO, "--episodes", "0"], ["--episodes", "'0'"]),
    ("masked_moves", [REPO, "--episodes", "-3"], ["--episodes", "'-3'"]),
    ("learning", ["--algos", "nope", "--quick"], ["--algos", "'nope'", "ppo2", "imitation"]),
    ("learning", ["--jobs", "0"], ["--jobs", "'0'"]),
    ("learning", ["--rerun", "ppo2", "--algos", "ppo2", "--seeds", "0", "--quick"], ["--rerun ppo2", "--reuse"]),
    ("srl_table", ["--epochs", "0"], ["--epochs", "'0'"]),
    ("renderer_gtc", ["--episodes", "0"], ["--episodes", "'0'"]),
    ("renderer_gtc", ["--srl-model", "foo", *GTC_SMALL], ["--srl-model", "'foo'", "vae", "srl_splits"]),
    ("renderer_gtc", ["--srl-model", "downsample", *GTC_SMALL], ["--srl-model", "'downsample'", "vae"]),
    ("srl_speed", ["--steps", "0"], ["--steps", "'0'"]),
    ("argument_checks", ["--rounds", "0"], ["--rounds", "'0'"]),
    ("argument_checks", ["--modes", "pixels"], ["--modes", "'pixels'", "ground_truth", "raw_pixels"]),
    ("argument_checks", ["--algos", "sac"], ["--algos", "'sac'", "ppo2", "ppo1"]),
    ("pixel_update_speed", ["--threads", "1", str((os.cpu_count() or 1) + 1)],
     ["--threads", f"{(os.cpu_count() or 1) + 1} is more than this machine's", "valid: 1.."]),
    ("vec_env_speed", ["--num-cpu", "1"], ["--num-cpu 1", "2 or more"]),
    ("vec_env_speed", ["--cases", "MobileRobotGymEnv-v0:pca"],
     ["'MobileRobotGymEnv-v0:pca'", "ground_truth, raw_pixels, vae"]),
    # a renderer checked with the cases, before the first is measured (it was refused when its case's run started)
    ("vec_env_speed", ["--cases", "MobileRobotGymEnv-v0:ground_truth", "MobileRobotGymEnv-v0:raw_pixels:nope"],
     ["--cases", "'MobileRobotGymEnv-v0:raw_pixels:nope'", "unknown renderer 'nope'", "sprites"]),
    ("vec_env_speed", ["--cases", "KukaButtonGymEnv-v0:raw_pixels:sprites"],
     ["--cases", "KukaButtonGymEnv-v0 cannot draw with it", "lowpoly"]),
    ("srl_epoch_speed", ["--steps", "100"], ["--steps 100", "250"]),
    ("cnn_features", ["--renderer", "foo", "--report-only", "--no-append"],
     ["--renderer foo", "valid choices: tinyrenderer"]),
    ("cnn_features", ["--envs", "KukaButtonGymEnv-v0", "--renderer", "sprites", "--report-only", "--no-append"],
     ["--renderer sprites", "KukaButtonGymEnv-v0", "lowpoly"]),
]


def _written() -> dict:
    """:return: every file of docs/, where a benchmark writes (docs/benchmarks.md above all), with its size and time"""
    return snapshot(os.path.join(REPO, "docs"))


def assertOneLineError(result: subprocess.CompletedProcess, words: list[str]) -> None:
    """Exit code 2, no traceback, and stderr is one ``error: ...`` line holding every word."""
    output = f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert result.returncode == 2, output
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout, output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), output
    assert "usage:" not in result.stderr, output
    for word in words:
        assert word in lines[0], f"{word!r} not in {lines[0]!r}"


@pytest.mark.parametrize("module,arguments,words", [
    pytest.param(module, arguments, words, id=f"{module}-{'-'.join(arguments).replace(REPO, 'REPO')}")
    for module, arguments, words in CASES])
def test_bad_benchmark_input_is_one_line(module: str, arguments: list[str], words: list[str]) -> None:
    before = _written()
    result = runModule(f"benchmarks.{module}", *arguments, timeout=120)
    assert _written() == before, "a refused benchmark command wrote files"
    assertOneLineError(result, words)


# (module, bad arguments with {bench} for a bench folder, words of the error line): benchmarks that write a bench
# folder refuse these before creating it (a seed flag of the project's seed type; an --eval-freq past the runs' steps)
BENCH_CASES = [
    ("srl_rl", ["--quick", "--bench-dir", "{bench}", "--env", "MobileRobotGymEnv-v0", "--observations", "ground_truth",
                "vae", "--seeds", "1", "--srl-seed", "-5", "--no-progress"], ["--srl-seed", "'-5'", "0..4294967295"]),
    ("srl_rl", ["--quick", "--bench-dir", "{bench}", "--env", "MobileRobotGymEnv-v0", "--srl-seed", "4294967296"],
     ["--srl-seed", "'4294967296'", "out of range"]),
    ("srl_rl", ["--quick", "--bench-dir", "{bench}", "--env", "MobileRobotGymEnv-v0", "--envs", "300"],
     ["--envs", "'300'", "1..256"]),
    ("srl_rl", ["--quick", "--bench-dir", "{bench}", "--env", "MobileRobotGymEnv-v0", "--observations", "vae",
                "--seeds", "1", "--state-dim", "100000000", "--no-progress"],
     ["--state-dim", "'100000000'", "1..4096"]),
    ("state_shape", ["--map-seed", "-1", "--results", "{bench}/results.json"], ["--map-seed", "'-1'", "0..4294967295"]),
    ("state_shape", ["--first-seed", "4294967296", "--results", "{bench}/results.json"],
     ["--first-seed", "'4294967296'", "out of range"]),
    ("state_shape", ["--n-envs", "0", "--results", "{bench}/results.json"], ["--n-envs", "'0'"]),
    ("cnn_features", ["--envs", "MobileRobotGymEnv-v0", "--budget", "100", "--eval-freq", "5000", "--bench-dir",
                      "{bench}", "--workers", "1"],
     ["--eval-freq 5000 is more than the 100 steps of a raw-pixel run", "no evaluation would run"]),
]


@pytest.mark.parametrize("module,arguments,words", [
    pytest.param(module, arguments, words, id=f"{module}-{'-'.join(arguments)}")
    for module, arguments, words in BENCH_CASES])
def test_bad_benchmark_input_writes_no_bench_folder(tmp_path, module: str, arguments: list[str],
                                                    words: list[str]) -> None:
    bench = tmp_path / "bench"
    before = _written()
    result = runModule(f"benchmarks.{module}", *[argument.replace("{bench}", str(bench)) for argument in arguments],
                       timeout=120)
    assert _written() == before and not bench.exists(), "a refused benchmark command wrote files"
    assertOneLineError(result, words)


# (module, arguments with {file} for an existing text file and {tmp} for the test's folder, words of the error line):
# a path of the wrong kind (a file for a folder, a text file for a results file, a --doc file that does not exist) is
# refused up front, before any work and without writing anything
PATH_CASES = [
    ("state_shape", ["--results", "{file}", "--no-append"], ["--results", "notes.md", "not a readable JSON file"]),
    ("profile_runs", ["--keep", "{file}", "--no-append"], ["--keep", "notes.md", "is a file, not a folder"]),
    ("renderer_gtc", ["--keep", "{file}", "--seeds", "0", "--episodes", "2", "--no-append"],
     ["--keep", "notes.md", "is a file, not a folder"]),
    ("srl_table", ["--data-path", "{file}", "--log-folder", "{tmp}/logs", "--no-doc"],
     ["--data-path", "notes.md", "is a file, not a folder"]),
    ("srl_table", ["--data-path", "{tmp}/data", "--log-folder", "{tmp}/logs", "--doc", "{tmp}/missing/x.md"],
     ["--doc", "missing/x.md", "does not exist"]),
    ("cnn_features", ["--bench-dir", "{file}", "--no-append"], ["--bench-dir", "notes.md", "is a file, not a folder"]),
    ("srl_rl", ["--doc", "{tmp}/missing/x.md", "--report-only", "--no-append", "--bench-dir", "{tmp}/bench"],
     ["--doc", "missing/x.md", "does not exist"]),
    ("gt_curves", ["-i", "{tmp}", "-o", "{tmp}/curves.txt"], ["--output", "curves.txt'", "not a .png file"]),
    ("env_speed", ["--results-file", "{tmp}/missing/x.md", "--seconds", "0.05"],
     ["--results-file", "missing/x.md", "does not exist"]),
    ("train_speed", ["--results-file", "{tmp}", "--steps", "300"], ["--results-file", "is a folder, not a file"]),
]


@pytest.mark.parametrize("module,arguments,words", [
    pytest.param(module, arguments, words, id=f"{module}-{arguments[0]}") for module, arguments, words in PATH_CASES])
def test_a_bad_path_is_refused_before_any_work(tmp_path, module: str, arguments: list[str], words: list[str]) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# notes, not a folder nor JSON\n")
    before, files = _written(), snapshot(str(tmp_path))
    result = runModule(f"benchmarks.{module}", *[argument.replace("{file}", str(notes)).replace("{tmp}", str(tmp_path))
                                                 for argument in arguments], timeout=120)
    assert _written() == before and snapshot(str(tmp_path)) == files, "a refused benchmark command wrote files"
    assertOneLineError(result, words)


@pytest.mark.parametrize("module,flag", [("srl_rl.cli", "--srl-seed"), ("state_shape", "--map-seed"),
                                         ("state_shape", "--first-seed")])
@pytest.mark.parametrize("value", ["-5", "4294967296"])
def test_seed_flags_take_the_projects_seed_type(module: str, flag: str, value: str) -> None:
    """A benchmark's seed flag is refused at parsing, as train's --seed is (0..2**32-1), not after minutes of work."""
    parser = importlib.import_module(f"benchmarks.{module}").buildParser()
    with pytest.raises(UsageError, match=f"{flag}.*'{value}'"):
        parser.parse_args([flag, value])


def test_every_benchmark_command_is_covered() -> None:
    """Every script asked to refuse bad input has cases here (a script added later should get some)."""
    assert {module for module, _, _ in CASES} >= {
        "env_speed", "all_envs_speed", "render_speed", "kuka_speed", "dataset_speed", "train_speed", "kuka_ppo_speed",
        "device_speed", "sweep_speed", "sweep_layout", "profile_runs", "masked_moves", "learning", "srl_table", "renderer_gtc",
        "srl_speed", "srl_epoch_speed", "cnn_features", "env_start", "shared_cores", "vec_env_speed",
        "argument_checks"}


class _Built(Exception):
    """Raised by a fake env once constructed: benchEnv's keywords are all the test needs."""


def test_env_speed_builds_its_env_with_tinyrenderer() -> None:
    """The env / bare ratio compares like with like: the env draws with TinyRenderer, as the bare loop photographs
    (mobile robots draw with sprites by default)."""
    assert MobileRobotGymEnv.DEFAULT_RENDERER != "tinyrenderer"
    assert env_speed.tinyRendererKeywords(MobileRobotGymEnv) == {"renderer": "tinyrenderer"}
    assert env_speed.tinyRendererKeywords(type("OwnImages", (), {})) == {}  # draws its own images: no keyword
    built: dict = {}

    class Recorder:
        RENDERERS = ("tinyrenderer", "sprites")
        DEFAULT_RENDERER = "sprites"

        def __init__(self, **kwargs) -> None:
            built.update(kwargs)
            raise _Built

    with pytest.raises(_Built):
        env_speed.benchEnv(Recorder, "raw_pixels", 64, 0.01, [0, 1])
    assert built["renderer"] == "tinyrenderer" and built["srl_model"] == "raw_pixels"
    env = MobileRobotGymEnv(srl_model="ground_truth", seed=0, **env_speed.tinyRendererKeywords(MobileRobotGymEnv))
    try:
        assert env.renderer == "tinyrenderer"
    finally:
        env.close()
    assert "the env draws its images with TinyRenderer" in env_speed.reportNotes(1.0)


def test_an_env_family_benchmark_prints_its_notes_without_appending(tmp_path, capsys) -> None:
    """The notes (which renderer, the median of 3 repeats) went only to the appended file: --no-append printed the
    table alone."""
    rows = familyBenchmarkMain(["--seconds", "0.5", "--no-append"], "benchmarks.env_speed", "Title", ("A-v0",),
                               lambda seconds, envs: [{"env": envs[0], "rate": seconds}],
                               lambda seconds: f"each figure the median of 3 repeats of {seconds} s",
                               table=lambda rows: f"| {rows[0]['env']} | {rows[0]['rate']} |")
    out = capsys.readouterr().out
    assert rows == [{"env": "A-v0", "rate": 0.5}] and "| A-v0 | 0.5 |" in out
    assert "each figure the median of 3 repeats of 0.5 s" in out


def test_srl_table_quick_gives_no_advice_on_its_removed_folders(monkeypatch, capsys) -> None:
    """--quick trains in a temporary folder removed at the end (it writes nothing): it must not tell the user to add
    those folders to config/srl_models.yaml; the full run does."""
    def trainings(jobs, data_folders, args):
        return [srl_table.Result(job, "train", 1.0, folder=os.path.join(args.log_folder, job.model))
                for job in jobs[:2]]

    monkeypatch.chdir(REPO)  # main works from the repository's root
    monkeypatch.setattr(srl_table, "runProcess", lambda command, log_path: (0, "", 0.1))
    monkeypatch.setattr(srl_table, "datasetNote", lambda folder: "")
    monkeypatch.setattr(srl_table, "runAll", trainings)
    monkeypatch.setattr(srl_table, "markdownTable", lambda env, results, reference: "")
    monkeypatch.setattr(srl_table, "groundTruthRow", lambda results: None)
    monkeypatch.setattr(srl_table, "worseThanRandom", lambda results: [])
    srl_table.main(["--quick", "--env", "MobileRobotGymEnv-v0"])
    output = capsys.readouterr().out
    assert "config/srl_models.yaml" not in output and "removed at the end of --quick" in output
    assert "To use them by name" in srl_table.foldersText(trainings(srl_table.modelJobs(
        "MobileRobotGymEnv-v0", 8)[0], {}, argparse.Namespace(log_folder="logs/srl_bench")), temporary=False)


def test_srl_table_prints_the_count_and_the_time_left_of_its_trainings(monkeypatch, capsys) -> None:
    """Each finished training printed [i/N] alone: a watcher of the 50-minute run could not tell when it would end."""
    jobs = srl_table.modelJobs("MobileRobotGymEnv-v0", 8)[0][:3]
    monkeypatch.setattr(srl_table, "runTraining", lambda job, data_folder, args: srl_table.Result(
        job, "train", 1.0, error="stubbed"))
    results = srl_table.runAll(jobs, {"MobileRobotGymEnv-v0": "data"}, argparse.Namespace(jobs=1))
    assert [result.job for result in results] == jobs
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("]")[0] for line in lines] == [f"[{done}/3, about 0 min left" for done in (1, 2, 3)]


class _Parsed(Exception):
    """Raised in place of parsing: the parser that a benchmark's main built is all the test needs."""


def benchmarkParsers(monkeypatch) -> dict[str, argparse.ArgumentParser]:
    """:return: module -> the parser its main builds, for every benchmark command (none of them runs)"""
    def capture(self, args=None, namespace=None):
        raise _Parsed(self)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", capture)
    names = [f"benchmarks.{module.name}" for module in pkgutil.iter_modules(benchmarks.__path__)]
    parsers = {}
    for name in [*names, "benchmarks.srl_rl.cli"]:
        main = getattr(importlib.import_module(name), "main", None)
        if main is None:  # a shared module, or the package of a command
            continue
        with pytest.raises(_Parsed) as parsed:
            main([])
        parsers[name] = parsed.value.args[0]
    return parsers


def test_help_opens_with_whole_sentences_and_shows_the_defaults(monkeypatch) -> None:
    """``--help`` describes the command in whole sentences (a module docstring's first paragraph, not its first line,
    which stops mid-sentence when wrapped), and every option with a default shows it as ``[default]``."""
    parsers = benchmarkParsers(monkeypatch)
    assert {"benchmarks.learning", "benchmarks.srl_rl.cli", "benchmarks.masked_moves"} <= set(parsers)
    for name, parser in parsers.items():
        description = " ".join((parser.description or "").split())
        assert description.endswith((".", "?", ")")), f"{name}: {description!r}"
        for action in parser._actions:
            if action.option_strings and not action.required and action.default not in (None, False, [],
                                                                                         argparse.SUPPRESS):
                assert "[" in (action.help or ""), f"{name} {action.option_strings[0]}: {action.help!r} hides its " \
                    f"default {action.default!r}"


@pytest.mark.slow
def test_env_start_measures_both_ways(capsys) -> None:
    rows = env_start.main(["--envs", "2", "--repeats", "1", "--no-append"])
    assert [row["envs"] for row in rows] == [2]
    assert all(len(rows[0][way]) == 2 and min(rows[0][way]) > 0 for way in env_start.WAYS)
    assert "| 2 | " in capsys.readouterr().out


def test_every_benchmark_that_appends_takes_a_results_file(monkeypatch) -> None:
    """A benchmark with ``--no-append`` can also append its dated block to another markdown file than the
    repository's docs/benchmarks.md (``--results-file``), so that a trial run leaves the quoted results alone."""
    parsers = benchmarkParsers(monkeypatch)
    appending = {name for name, parser in parsers.items() if "--no-append" in parser._option_string_actions}
    assert {"benchmarks.env_speed", "benchmarks.learning", "benchmarks.srl_rl.cli",
            "benchmarks.zoo_compare"} <= appending
    assert [name for name in sorted(appending) if "--results-file" not in parsers[name]._option_string_actions] == []


def test_results_file_takes_the_block_instead_of_the_docs(tmp_path) -> None:
    results = tmp_path / "results.md"
    before = _written()
    result = runModule("benchmarks.all_envs_speed", "--seconds", "0.05", "MobileRobotGymEnv-v0", "--results-file",
                       str(results), timeout=180)
    assert result.returncode == 0, result.stderr
    assert _written() == before, "docs/ was written although --results-file named another file"
    text = results.read_text()
    assert text.startswith("# srl-toolbox benchmarks\n") and "## Environment speed, every env (" in text
    assert f"- Command: `python -m benchmarks.all_envs_speed --seconds 0.05 MobileRobotGymEnv-v0 --results-file " \
           f"{results}`\n- Machine: " in text and "| MobileRobotGymEnv-v0 | " in text
    assert f"appended to {results}\n" in result.stdout  # outside the working folder: absolute (it read ../../tmp/...)


def test_all_envs_speed_says_which_renderer_drew_each_envs_pixels(monkeypatch, capsys) -> None:
    """Each env's pixels are drawn by its default renderer (sprites, lowpoly or TinyRenderer: rates apart by up to
    10x): the table says which, per env."""
    from benchmarks import all_envs_speed
    appended = []
    monkeypatch.setattr(all_envs_speed, "stepsPerSecond", lambda env_id, mode, seconds: 100.0)
    monkeypatch.setattr(all_envs_speed, "appendReport", lambda *args, **kwargs: appended.append(args))
    all_envs_speed.main(["--seconds", "0.01", "MobileRobotGymEnv-v0", "KukaButtonGymEnv-v0"])
    table = appended[0][3]
    assert "| MobileRobotGymEnv-v0 | 100 | 100 | sprites |" in table
    assert "| KukaButtonGymEnv-v0 | 100 | 100 | lowpoly |" in table
    assert "default renderer" in appended[0][2] and "| sprites |" in capsys.readouterr().out
