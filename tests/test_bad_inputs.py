"""Every bad input of the train and enjoy commands: exit code 2, one line on stderr that names the bad value
(and the valid choices where there are some), no traceback, and nothing changed in the existing log folder."""
from __future__ import annotations

import os

import pytest
from conftest import runModule, snapshot

TRAIN = "rl_baselines.train"
ENJOY = "replay.enjoy_baselines"
GT = ["--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth"]

# (id, module, arguments, words the error line must contain); {run}, {log}, {bad} are filled in per test
CASES = [
    ("unknown-algo", TRAIN, ["--algo", "nope"], ["'nope'", "valid choices", "ppo2", "a2c"]),
    ("unknown-env", TRAIN, ["--env", "Nope-v0"], ["'Nope-v0'", "valid choices", "MobileRobotGymEnv-v0"]),
    ("unknown-srl-model", TRAIN, ["--env", "MobileRobotGymEnv-v0", "--srl-model", "vae"],
     ["'vae'", "valid choices", "ground_truth", "raw_pixels"]),
    ("joints-without-joints", TRAIN, [*GT, "-c", "--action-joints"], ["--action-joints", "MobileRobotGymEnv-v0"]),
    ("zero-timesteps", TRAIN, [*GT, "--num-timesteps", "0"], ["--num-timesteps", "'0'", "positive integer"]),
    ("negative-timesteps", TRAIN, [*GT, "--num-timesteps", "-5"], ["--num-timesteps", "'-5'"]),
    ("text-timesteps", TRAIN, [*GT, "--num-timesteps", "lots"], ["--num-timesteps", "'lots'"]),
    ("zero-cpu", TRAIN, [*GT, "--num-cpu", "0"], ["--num-cpu", "'0'", "positive integer"]),
    ("hyperparam-no-colon", TRAIN, [*GT, "--hyperparam", "n_steps"], ["'n_steps'", "KEY:VALUE"]),
    ("hyperparam-unknown", TRAIN, [*GT, "--hyperparam", "bogus:1"], ["'bogus'", "valid names", "n_steps"]),
    ("hyperparam-bad-type", TRAIN, [*GT, "--hyperparam", "n_steps:many"], ["'n_steps'", "int", "'many'"]),
    ("load-missing", TRAIN, [*GT, "--load-rl-model-path", "{log}/missing.zip"], ["missing.zip", "does not exist"]),
    ("load-corrupt", TRAIN, [*GT, "--load-rl-model-path", "{bad}/garbage.zip"], ["garbage.zip", "not a"]),
    ("load-truncated", TRAIN, [*GT, "--load-rl-model-path", "{bad}/truncated.zip"], ["truncated.zip"]),
    ("load-other-algo", TRAIN, [*GT, "--algo", "a2c", "--load-rl-model-path", "{run}/ppo2_model.zip"],
     ["'ppo2'", "not 'a2c'"]),
    ("fpv-without-camera", TRAIN, ["--env", "OmnirobotEnv-v0", "--fpv"],
     ["--fpv", "OmnirobotEnv-v0", "no second camera", "MobileRobotGymEnv-v0"]),
    ("bad-port", TRAIN, [*GT, "--port", "70000"], ["'70000'", "port"]),
    ("bad-img-shape", TRAIN, ["--env", "MobileRobotGymEnv-v0", "--img-shape", "3", "8", "8"], ["3 8 8"]),
    ("enjoy-no-run", ENJOY, ["--log-dir", "{log}"], ["holds no run"]),
    ("enjoy-missing-folder", ENJOY, ["--log-dir", "{log}/nowhere"], ["nowhere", "not a folder"]),
    ("enjoy-bad-video", ENJOY, ["--log-dir", "{run}", "--video", "{bad}/out.avi"], ["out.avi", ".gif or .mp4"]),
    ("enjoy-zero-steps", ENJOY, ["--log-dir", "{run}", "--num-timesteps", "0"], ["--num-timesteps", "'0'"]),
]


@pytest.fixture(scope="module")
def badFiles(tmp_path_factory, trainedRun) -> str:
    folder = tmp_path_factory.mktemp("bad_files")
    (folder / "garbage.zip").write_bytes(b"this is not a model" * 10)
    model = open(os.path.join(trainedRun, "ppo2_model.zip"), "rb").read()
    (folder / "truncated.zip").write_bytes(model[: len(model) // 2])
    return str(folder)


@pytest.mark.parametrize("case_id,module,arguments,words", CASES, ids=[case[0] for case in CASES])
def test_bad_input(case_id, module, arguments, words, trainedRun, badFiles):
    # the shared run's log root: a folder with a real run in it, which must stay untouched
    log_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(trainedRun))))
    fill = {"run": trainedRun, "log": log_root, "bad": badFiles}
    arguments = [arg.format(**fill) for arg in arguments]
    if module == TRAIN:
        arguments += ["--log-dir", log_root, "--no-vis"]
    before = snapshot(log_root)
    result = runModule(module, *arguments)
    assert result.returncode == 2, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    for word in words:
        assert word in lines[0], f"{word!r} not in {lines[0]!r}"
    assert snapshot(log_root) == before, "a bad command changed files on disk"
    assert not os.path.exists(os.path.join(badFiles, "out.avi"))


def test_existing_run_folder_is_never_reused(tmp_path, trainedRun):
    """Two runs started in the same second get two folders: nothing already on disk is overwritten."""
    from rl_baselines.train import baseParser, createRunFolder

    args = baseParser().parse_args(["--log-dir", str(tmp_path), "--tag", "same"])
    first, second = createRunFolder(args), createRunFolder(args)
    assert first != second and os.path.isdir(first) and os.path.isdir(second)
