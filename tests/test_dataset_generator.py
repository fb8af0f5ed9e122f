"""Tests of the dataset generator and fusioner (environments/dataset_generator.py, environments/dataset_fusioner.py):
the srl-zoo file layout and its alignment, determinism over processes, refuse / force / resume, bad inputs, merging;
the settings dataclass (GeneratorConfig) the parser is made from records in Python as on the command line."""
from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import cv2
import numpy as np
import pytest
from conftest import REPO, assertParserFromSettings, loadArrays, runModule, snapshot, trainHere
from filelock import FileLock

from environments import dataset_generator, getEnvClass
from environments.dataset import Dataset
from environments.dataset_generator import episodeSeed
from environments.generator_config import GeneratorConfig
from environments.mobile_robot.mobile_robot_env import MobileRobotGymEnv
from environments.srl_env import FRESH_WORLD
from rl_baselines.runs.run_policy import RunPolicy, loadRunPolicy
from srl_models.train_data import datasetSizes
from srl_toolbox.cli import UsageError

pytestmark = pytest.mark.slow  # whole trainings or sweeps: left out of `make test-fast`

GENERATOR = "environments.dataset_generator"
FUSIONER = "environments.dataset_fusioner"
N_EPISODES, N_STEPS, SEED = 16, 25, 7
# Small images and short episodes keep every run to a second or two.
SETTINGS = ["--env", "MobileRobotGymEnv-v0", "--img-shape", "3", "32", "32", "--max-steps", str(N_STEPS),
            "--seed", str(SEED), "-r", "--image-format", "png", "--num-episode", str(N_EPISODES), "--no-progress"]
NAME = "ds"
DATASET_FILES = {"dataset_config.json", "env_globals.json", "preprocessed_data.npz", "ground_truth.npz"}


def generate(save_path, *args: str, name: str = NAME, check: bool = True) -> subprocess.CompletedProcess:
    result = runModule(GENERATOR, "--save-path", save_path, "--name", name, *args)
    if check:
        assert result.returncode == 0, f"generator failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    return result


def readJson(path) -> dict:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def fileContents(folder) -> dict[str, bytes]:
    contents = {}
    for root, _, files in os.walk(folder):
        for file_name in files:
            path = os.path.join(root, file_name)
            with open(path, "rb") as handle:
                contents[os.path.relpath(path, folder)] = handle.read()
    return contents


def assertOneLineError(result: subprocess.CompletedProcess, *words: str) -> None:
    assert result.returncode == 2, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for word in words:
        assert word in lines[0], f"{word!r} not in {lines[0]!r}"


@pytest.fixture(scope="session")
def references(tmp_path_factory) -> dict[int, str]:
    """The same dataset written by 2 processes and by 1 (same name, two save paths), built once per test run even
    when pytest-xdist spreads this module's tests over several workers."""
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    root = tmp_path_factory.getbasetemp().parent / f"dataset_references_{run_id}" if run_id else \
        tmp_path_factory.mktemp("dataset_references")
    root.mkdir(exist_ok=True)
    folders = {num_cpu: str(root / f"cpu{num_cpu}" / NAME) for num_cpu in (2, 1)}
    with FileLock(str(root / "build.lock")):
        for num_cpu, folder in folders.items():
            if not os.path.isdir(folder):
                result = generate(os.path.dirname(folder), *SETTINGS, "--num-cpu", str(num_cpu))
                assert f"with {num_cpu} process" in result.stdout
    return folders


def test_round_trip_two_processes(references):
    folder = references[2]
    assert set(os.listdir(os.path.dirname(folder))) == {NAME}, "bookkeeping folders left beside the dataset"
    records = sorted(entry for entry in os.listdir(folder) if entry.startswith("record_"))
    assert records == [f"record_{e:03d}" for e in range(N_EPISODES)]
    assert set(os.listdir(folder)) == DATASET_FILES | set(records)

    data = loadArrays(folder)
    n_frames = N_EPISODES * N_STEPS  # the mobile robot never terminates: every episode lasts max_steps
    assert set(data) == {"actions", "rewards", "episode_starts", "ground_truth_states", "target_positions",
                         "step_target_positions", "images_path"}
    assert data["actions"].shape == (n_frames,) and data["actions"].dtype.kind == "i"
    assert set(np.unique(data["actions"])) <= {0, 1, 2, 3} and len(np.unique(data["actions"])) == 4
    assert data["rewards"].shape == (n_frames,)
    assert data["episode_starts"].dtype == bool and data["episode_starts"].shape == (n_frames,)
    assert np.flatnonzero(data["episode_starts"]).tolist() == list(range(0, n_frames, N_STEPS))
    assert data["ground_truth_states"].shape == (n_frames, 2)
    assert data["target_positions"].shape == (N_EPISODES, 2)
    # a fixed target: the target at each row is the episode's
    episode = np.cumsum(data["episode_starts"]) - 1
    np.testing.assert_array_equal(data["step_target_positions"], data["target_positions"][episode])
    assert not Dataset.open(folder).targetMoves()
    assert "relative_to" not in datasetSizes(Dataset.open(folder), {"supervised": 1.0})  # recipes unchanged
    assert data["images_path"].shape == (n_frames,) and data["images_path"].dtype.kind == "U"

    # Every path names an existing, decodable, non-blank image of the right size; one file per row.
    expected_paths = [f"{NAME}/record_{e:03d}/frame{t:06d}" for e in range(N_EPISODES) for t in range(N_STEPS)]
    assert data["images_path"].tolist() == expected_paths
    for record in records:
        assert len(os.listdir(os.path.join(folder, record))) == N_STEPS
    save_path = os.path.dirname(folder)
    for path in data["images_path"][::37]:
        image = cv2.imread(os.path.join(save_path, f"{path}.png"))
        assert image is not None and image.shape == (32, 32, 3)
        assert image.std() > 5, f"{path} is blank"

    # Random targets: one per episode, inside the env's range; ground truth is absolute, inside the arena.
    low, high = MobileRobotGymEnv.TARGET_RANGE
    targets = data["target_positions"]
    assert np.all((targets >= low) & (targets <= high)) and len(np.unique(targets[:, 0])) == N_EPISODES
    (x_low, x_high), (y_low, y_high) = MobileRobotGymEnv.ROBOT_X_BOUNDS, MobileRobotGymEnv.ROBOT_Y_BOUNDS
    states = data["ground_truth_states"]
    assert np.all((states[:, 0] >= x_low - 1e-5) & (states[:, 0] <= x_high + 1e-5))
    assert np.all((states[:, 1] >= y_low - 1e-5) & (states[:, 1] <= y_high + 1e-5))

    # Alignment: row i is the state before action i, so state i + 1 = state i + move(action i) (unless the move
    # bumped, reward -1), and reward i is +1 exactly when state i + 1 is within reach of the episode's target.
    moves = np.array([[-0.1, 0.0], [0.1, 0.0], [0.0, -0.1], [0.0, 0.1]])
    episode_of_row = np.repeat(np.arange(N_EPISODES), N_STEPS)
    for i in range(n_frames - 1):
        if data["episode_starts"][i + 1]:
            continue
        step = states[i + 1] - states[i]
        if data["rewards"][i] == -1:
            assert np.allclose(step, 0.0, atol=1e-5)
        else:
            assert np.allclose(step, moves[data["actions"][i]], atol=1e-4), i
            near = np.linalg.norm(states[i + 1] - targets[episode_of_row[i]]) <= MobileRobotGymEnv.REWARD_DIST_THRESHOLD
            assert data["rewards"][i] == (1.0 if near else 0.0), i

    # The first image of an episode is exactly the env's first observation with that episode's seed (RGB order).
    env = MobileRobotGymEnv(img_shape=(3, 32, 32), random_target=True, max_steps=N_STEPS)
    try:
        for episode in (0, N_EPISODES - 1):
            observation, _ = env.reset(seed=episodeSeed(SEED, episode))
            image = cv2.imread(os.path.join(folder, f"record_{episode:03d}", "frame000000.png"))[:, :, ::-1]
            assert np.array_equal(image, observation)
            assert np.allclose(env.getGroundTruth(), states[episode * N_STEPS])
            assert np.allclose(env.getTargetPos(), targets[episode])
    finally:
        env.close()

    config = readJson(os.path.join(folder, "dataset_config.json"))
    assert config["relative_pos"] is True and config["env"] == "MobileRobotGymEnv-v0"
    assert config["img_shape"] == [3, 32, 32] and config["num_episodes"] == N_EPISODES
    assert config["seed"] == SEED and config["policy"] == "random" and config["image_format"] == "png"
    env_globals = readJson(os.path.join(folder, "env_globals.json"))
    assert env_globals["env_kwargs"]["max_steps"] == N_STEPS and env_globals["constants"]["STEP_SIZE"] == 0.1


def test_one_and_two_processes_write_identical_datasets(references):
    assert fileContents(references[1]) == fileContents(references[2])


def test_the_parser_is_generated_from_the_config():
    assertParserFromSettings(dataset_generator.buildParser(), GeneratorConfig)
    assert dataset_generator.parseConfig([]) == GeneratorConfig()
    assert dataset_generator.parseConfig(SETTINGS) == GeneratorConfig(
        env="MobileRobotGymEnv-v0", img_shape=(3, 32, 32), max_steps=N_STEPS, seed=SEED, random_target=True,
        image_format="png", num_episode=N_EPISODES, no_progress=True)


def test_a_config_built_in_python_records_like_the_command_line(tmp_path, references):
    config = dataclasses.replace(dataset_generator.parseConfig(SETTINGS), name=NAME, save_path=str(tmp_path))
    assert dataset_generator.generate(config) == 0
    assert fileContents(tmp_path / NAME) == fileContents(references[1])


@pytest.mark.parametrize("changes, message", [
    ({"image_format": "gif"}, "argument --image-format: invalid choice: 'gif' (choose from 'jpg', 'png')"),
    ({"num_episode": 0}, "argument --num-episode: '0' must be a positive integer"),
    ({"img_shape": (3, 32)}, "argument --img-shape: expected 3 arguments"),
    ({"num_cpu": 3, "num_episode": 2}, "--num-cpu 3 is more than --num-episode 2"),
])
def test_a_config_built_in_python_is_refused_as_the_command_line_refuses_it(tmp_path, changes, message):
    config = dataclasses.replace(GeneratorConfig(save_path=str(tmp_path / "data")), **changes)
    with pytest.raises(UsageError) as raised:
        dataset_generator.generate(config)
    assert message in str(raised.value) and "\n" not in str(raised.value)
    assert os.listdir(tmp_path) == []


def test_existing_dataset_is_refused_then_forced(tmp_path):
    small = ["--img-shape", "3", "32", "32", "--max-steps", "10", "--num-episode", "2", "--no-progress"]
    generate(tmp_path, *small, "--seed", "1")
    folder = tmp_path / NAME
    before = snapshot(tmp_path)
    first = loadArrays(folder)
    assertOneLineError(generate(tmp_path, *small, "--seed", "2", check=False), "already exists", "--force")
    assert snapshot(tmp_path) == before, "a refused run changed files"
    assert "jpg" in {name.rsplit(".", 1)[-1] for name in os.listdir(folder / "record_000")}

    result = generate(tmp_path, *small, "--seed", "2", "--force", "--reward-dist")
    assert "Reward distribution" in result.stdout
    second = loadArrays(folder)
    assert not np.array_equal(first["ground_truth_states"], second["ground_truth_states"])
    assert sorted(os.listdir(tmp_path)) == [NAME], "bookkeeping folders left beside the dataset"
    assert readJson(folder / "dataset_config.json")["seed"] == 2


def test_a_refusal_prints_its_error_alone(tmp_path):
    """A flag that does nothing on the env (-r on CarRacing: a warning) with a bad value: the refusal alone, from the
    checks as from the dataset folder's (nothing written); accepted, the warning is shown."""
    idle = ["--env", "CarRacingGymEnv-v0", "-r", "--img-shape", "3", "32", "32", "--max-steps", "5",
            "--num-episode", "1", "--no-progress"]
    assertOneLineError(generate(tmp_path, *idle, "--max-distance", "0.5", check=False), "--max-distance")
    assert os.listdir(tmp_path) == []
    os.mkdir(tmp_path / NAME)
    assertOneLineError(generate(tmp_path, *idle, check=False), "already exists")
    result = generate(tmp_path, *idle, "--force")
    assert "warning: -r/--random-target does nothing on CarRacingGymEnv-v0" in result.stderr


def test_resume_with_nothing_to_resume_says_so_and_records(tmp_path):
    small = ["--img-shape", "3", "32", "32", "--max-steps", "10", "--num-episode", "2", "--no-progress"]
    result = generate(tmp_path, *small, "--resume")
    warning = [line for line in result.stderr.splitlines() if "--resume" in line]
    assert len(warning) == 1 and "no interrupted recording" in warning[0] and NAME in warning[0], result.stderr
    assert sorted(os.listdir(tmp_path)) == [NAME]


def test_killed_run_is_refused_then_resumed(tmp_path, references):
    """SIGKILL a 2-process run after its first episodes; --resume completes it into the uninterrupted dataset."""
    partial = tmp_path / f".{NAME}.partial"
    episodes_folder = partial / "episodes"
    process = subprocess.Popen([sys.executable, "-m", GENERATOR, "--save-path", str(tmp_path), "--name", NAME,
                                *SETTINGS, "--num-cpu", "2"], cwd=REPO, start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        done = [f for f in os.listdir(episodes_folder) if ".tmp" not in f] if episodes_folder.is_dir() else []
        if len(done) >= 2:
            break
        time.sleep(0.01)
    os.killpg(process.pid, signal.SIGKILL)  # the generator and its workers, as a crash or an OOM kill would
    process.wait()
    assert not (tmp_path / NAME).exists(), "the run finished before it could be killed"
    kept = len([f for f in os.listdir(episodes_folder) if ".tmp" not in f])
    assert 2 <= kept < N_EPISODES

    before = snapshot(tmp_path)
    assertOneLineError(generate(tmp_path, *SETTINGS, check=False), "--resume", "--force")
    other = [arg if arg != str(SEED) else "8" for arg in SETTINGS]
    assertOneLineError(generate(tmp_path, *other, "--resume", check=False), "(seed was 7, now 8)")
    assert snapshot(tmp_path) == before, "a refused run changed the interrupted one"

    result = generate(tmp_path, *SETTINGS, "--num-cpu", "2", "--resume")
    assert f"{kept} of {N_EPISODES} episodes already recorded" in result.stdout
    assert sorted(os.listdir(tmp_path)) == [NAME]
    assert fileContents(tmp_path / NAME) == fileContents(references[2])
    assertOneLineError(generate(tmp_path, *SETTINGS, "--resume", check=False), "already complete")


def test_ctrl_c_keeps_finished_episodes(tmp_path):
    """SIGINT (Ctrl-C in a terminal reaches the whole process group): exit 130, a one-line hint, the partial kept."""
    episodes_folder = tmp_path / f".{NAME}.partial" / "episodes"
    process = subprocess.Popen([sys.executable, "-m", GENERATOR, "--save-path", str(tmp_path), "--name", NAME,
                                *SETTINGS, "--num-cpu", "2"], cwd=REPO, start_new_session=True, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if episodes_folder.is_dir() and any(".tmp" not in f for f in os.listdir(episodes_folder)):
            break
        time.sleep(0.01)
    os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "--resume" in stderr.splitlines()[-1] and "episodes kept" in stderr.splitlines()[-1]
    assert not (tmp_path / NAME).exists() and episodes_folder.is_dir()


def test_a_ctrl_c_while_the_workers_are_forked_stops_the_recording(tmp_path, capsys):
    """A Ctrl-C that reached this process while it forked a worker was raised in an at-fork hook of the standard
    library, which ignores exceptions ("Exception ignored in: _releaseLock"): the recording went on to the end and
    exited 0. The signal is now kept pending until the workers are started, then stops the recording."""
    armed = [True]

    def ctrlCWhileForking() -> None:
        if armed[0]:
            armed[0] = False
            os.kill(os.getpid(), signal.SIGINT)

    os.register_at_fork(after_in_parent=ctrlCWhileForking)  # (cannot be removed: it fires once)
    config = dataset_generator.parseConfig(["--save-path", str(tmp_path), "--name", NAME, *SETTINGS[:-3],
                                            "--num-episode", "4", "--num-cpu", "2", "--no-progress"])
    code = dataset_generator.generate(config)
    armed[0] = False
    assert code == 130
    assert not (tmp_path / NAME).exists()
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("Interrupted")


@pytest.mark.parametrize("arguments,words", [
    (["--env", "NopeGymEnv-v0"], ["'NopeGymEnv-v0'", "valid choices", "MobileRobotGymEnv-v0"]),
    (["-c", "--action-joints"], ["--action-joints", "MobileRobotGymEnv-v0"]),
    (["--img-shape", "3", "8", "8"], ["--img-shape 3 8 8", "H, W in 16..4096"]),
    (["--img-shape", "3", "100000", "100000", "--image-format", "png"], ["--img-shape 3 100000 100000", "16..4096"]),
    (["--img-shape", "4", "64", "64"], ["--img-shape 4 64 64"]),
    (["--num-episode", "2", "--num-cpu", "3"], ["--num-cpu 3", "--num-episode 2"]),
    (["--num-episode", "0"], ["--num-episode", "'0'"]),
    (["--max-distance", "0.5"], ["--max-distance", "MobileRobotGymEnv-v0", "envs with --max-distance:",
                                 "KukaButtonGymEnv-v0"]),
    (["--env", "KukaButtonGymEnv-v0", "--max-distance", "nan"], ["argument --max-distance: 'nan' must be a positive"]),
    (["--env", "KukaButtonGymEnv-v0", "--max-distance", "inf"], ["argument --max-distance: 'inf' must be a positive"]),
    (["--env", "KukaButtonGymEnv-v0", "--max-distance", "-1"], ["argument --max-distance: '-1' must be a positive"]),
    (["--multi-view"], ["--multi-view", "MobileRobotGymEnv-v0", "envs with --multi-view:", "KukaButtonGymEnv-v0"]),
    (["--env", "OmnirobotEnv-v0", "--fpv"], ["--fpv", "OmnirobotEnv-v0", "envs with --fpv:", "MobileRobotGymEnv-v0"]),
    (["--force", "--resume"], ["--force", "--resume"]),
    (["--image-format", "gif"], ["'gif'", "jpg", "png"]),
    (["--policy", "{tmp}"], ["--policy", "no args.json"]),
], ids=["unknown-env", "joints-on-mobile-robot", "img-too-small", "img-too-large", "img-four-channels",
        "cpu-over-episodes", "zero-episodes", "max-distance-unsupported", "max-distance-nan",
        "max-distance-inf", "max-distance-negative", "multi-view-unsupported", "fpv-unsupported", "force-and-resume",
        "bad-image-format", "policy-not-a-run"])
def test_bad_input(tmp_path, arguments, words):
    arguments = [arg.format(tmp=tmp_path) for arg in arguments]
    result = generate(tmp_path / "data", "--num-episode", "4", *arguments, check=False)
    assertOneLineError(result, *words)
    assert not (tmp_path / "data").exists(), "a bad command wrote files"


def test_fusioner_merges_datasets(tmp_path):
    small = ["--img-shape", "3", "32", "32", "--max-steps", "10", "--no-progress", "-r", "--image-format", "png"]
    generate(tmp_path, *small, "--num-episode", "4", "--seed", "1", name=NAME)
    generate(tmp_path, *small, "--num-episode", "3", "--seed", "2", name="small")
    first, second = str(tmp_path / NAME), str(tmp_path / "small")
    before = snapshot(first)
    destination = tmp_path / "merged"
    result = runModule(FUSIONER, "--merge", first, second, destination)
    assert result.returncode == 0, result.stderr
    assert snapshot(first) == before and os.path.isdir(second), "sources must be kept"

    a, b, merged = loadArrays(first), loadArrays(second), loadArrays(destination)
    for key in a:
        assert len(merged[key]) == len(a[key]) + len(b[key]), key
    for key in ("actions", "rewards", "episode_starts", "ground_truth_states", "target_positions",
                "step_target_positions"):
        assert np.array_equal(merged[key], np.concatenate([a[key], b[key]])), key
    n_episodes = 4 + 3
    records = sorted(entry for entry in os.listdir(destination) if entry.startswith("record_"))
    assert records == [f"record_{e:03d}" for e in range(n_episodes)]
    paths = merged["images_path"].tolist()
    assert paths[0] == "merged/record_000/frame000000"
    assert paths[len(a["rewards"])] == "merged/record_004/frame000000"
    assert paths[-1] == f"merged/record_{n_episodes - 1:03d}/frame000009"
    for path, old in zip(paths[len(a["rewards"]):], b["images_path"].tolist(), strict=True):  # images moved with their rows
        with open(tmp_path / f"{path}.png", "rb") as new_file, open(tmp_path / f"{old}.png", "rb") as old_file:
            assert new_file.read() == old_file.read()
    config = readJson(destination / "dataset_config.json")
    assert config["num_episodes"] == n_episodes and [s["name"] for s in config["merged_from"]] == [NAME, "small"]

    before = snapshot(tmp_path)
    assertOneLineError(runModule(FUSIONER, "--merge", first, second, destination), "already exists")
    assertOneLineError(runModule(FUSIONER, "--merge", first, destination / "x"), "two sources")
    assertOneLineError(runModule(FUSIONER, "--merge", first, tmp_path / "nowhere", tmp_path / "out"), "nowhere")
    assertOneLineError(runModule(FUSIONER, "--merge", second, destination, tmp_path / "again"),  # (merged holds it)
                       "identical episodes", "small/record_000 = merged/record_004")
    assert snapshot(tmp_path) == before

    generate(tmp_path, *small, "--num-episode", "2", "--seed", "3", name="third")
    third = str(tmp_path / "third")
    result = runModule(FUSIONER, "--merge", third, destination, tmp_path / "again", "--delete-sources")
    assert result.returncode == 0, result.stderr
    assert not os.path.exists(third) and not destination.exists()
    assert len(loadArrays(tmp_path / "again")["rewards"]) == 2 * 10 + len(merged["rewards"])


def test_policy_from_a_run_folder(tmp_path, trainedRun):
    """Episodes of a trained agent (ground truth, normalised) recorded by 2 processes are those the agent plays when
    replayed here with each episode's seed."""
    n_steps, seed = 20, 3
    generate(tmp_path, "--img-shape", "3", "32", "32", "--max-steps", str(n_steps), "--num-episode", "2",
             "--seed", str(seed), "--no-progress", "--policy", trainedRun, "--num-cpu", "2")
    data = loadArrays(tmp_path / NAME)
    config = readJson(tmp_path / NAME / "dataset_config.json")
    assert config["policy"] == os.path.abspath(trainedRun)

    policy = loadRunPolicy(trainedRun)
    assert policy.force_down is False  # read from args.json (the arms' setting; this run has none)
    assert config["renderer"] == policy.renderer == readJson(os.path.join(trainedRun, "args.json"))["renderer"]
    env = MobileRobotGymEnv(img_shape=(3, 32, 32), max_steps=n_steps)
    try:
        for episode in range(2):
            observation, _ = env.reset(seed=episodeSeed(seed, episode))
            policy.reset(episodeSeed(seed, episode))
            actions = []
            for _ in range(n_steps):
                actions.append(policy.act(env, observation))
                observation, *_ = env.step(actions[-1])
            assert actions == data["actions"][episode * n_steps:(episode + 1) * n_steps].tolist()
    finally:
        env.close()
    assertOneLineError(generate(tmp_path / "other", "--policy", trainedRun, "-c", check=False), "discrete", "drop -c")
    # --env left out: the run's own (a Kuka default would refuse it; the generator's default is the mobile robot)
    assert dataset_generator.validate(dataset_generator.parseConfig(
        ["--policy", trainedRun, "--save-path", str(tmp_path / "x")]))[0].env_id == policy.env_id


@pytest.mark.parametrize("algo", ["random_agent", "deepq", "qrdqn"])
def test_an_agent_sampling_with_its_own_generator_records_the_same_dataset_with_1_and_2_processes(tmp_path, algo):
    """random_agent (its action space), deepq (its rng) and SB3's qrdqn (NumPy's global generator and its action
    space, epsilon-greedy) sample with generators besides torch's: each episode reseeds them (seedActionSampling)."""
    run = trainHere("--algo", algo, "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth",
                    "--num-timesteps", "300", "--log-dir", tmp_path / "run", "--seed", "1",
                    *(["--hyperparam", "exploration_final_eps:0.5"] if algo in ("deepq", "qrdqn") else []))
    datasets = []
    for num_cpu in (1, 2):
        generate(tmp_path / f"cpu{num_cpu}", "--img-shape", "3", "16", "16", "--max-steps", "30", "--num-episode", "2",
                 "--seed", "5", "--no-progress", "--policy", run, "--num-cpu", str(num_cpu))
        datasets.append(loadArrays(tmp_path / f"cpu{num_cpu}" / NAME)["actions"])
    np.testing.assert_array_equal(datasets[0], datasets[1])
    assert not np.array_equal(datasets[0][:30], datasets[0][30:]), "both episodes played the same actions"


def test_a_replayed_recurrent_agent_starts_each_episode_with_a_fresh_memory(trainedRun):
    """RunPolicy never told the agent an episode had started: a ppo_lstm expert carried its LSTM state from one
    recorded episode into the next, so an episode depended on those its process had played before."""
    policy = loadRunPolicy(trainedRun)
    given = []

    class Recording:
        """Records the dones each action is asked with."""

        def getAction(self, observation, dones=None, deterministic=False):
            given.append(dones.tolist())
            return np.zeros(1, dtype=np.int64)

        def seedActionSampling(self, seed):
            """(each episode's seed reaches the agent: BaseRLObject's method)"""

    policy.agent = Recording()
    env = MobileRobotGymEnv(img_shape=(3, 32, 32), max_steps=5)
    try:
        for episode in range(2):
            observation, _ = env.reset(seed=episode)
            policy.reset(episode)
            for _ in range(3):
                observation, *_ = env.step(policy.act(env, observation))
    finally:
        env.close()
    assert given == [[True], [False], [False]] * 2


def test_an_arm_episode_does_not_depend_on_the_episodes_played_before(tmp_path):
    """An arm keeps contact caches across resets (RESET_KEEPS_HISTORY): the generator starts each episode from a
    scene built anew, so which process played it after which others (any --num-cpu, a resumed run) does not show."""
    config = dataset_generator.parseConfig(["--env", "KukaRandButtonGymEnv-v0", "--save-path", str(tmp_path),
                                            "--img-shape", "3", "32", "32", "--max-steps", "100",
                                            "--image-format", "png"])
    spec = dataset_generator.validate(config)[0]
    partial_dir = str(tmp_path / "partial")

    def record(env, episode: int) -> tuple[dict, dict]:
        dataset_generator.recordEpisode(env, None, spec, episode, partial_dir)
        with np.load(dataset_generator.episodeFile(partial_dir, episode)) as data:
            arrays = {key: data[key] for key in data.files}
        return arrays, fileContents(os.path.join(partial_dir, dataset_generator.recordFolder(episode)))

    env = dataset_generator.makeEnv(spec)
    try:
        arrays, images = record(env, 14)
        record(env, 3)  # a distractor-strewn episode before: without a new scene, episode 14's floats differ
        again, again_images = record(env, 14)
    finally:
        env.close()
    assert set(again) == set(arrays) and len(arrays["actions"]) > 1
    for key, value in arrays.items():
        np.testing.assert_array_equal(again[key], value, err_msg=key)
    assert again_images == images


def test_a_moving_target_is_recorded_row_by_row_and_relative_ground_truth_follows_it(tmp_path):
    """KukaMovingButton's button moves every step: the relative ground truth a dataset gives (GTC, the probe,
    behaviour cloning, the supervised model) is the env's own relative observation at each row, not one taken
    from the episode's first target."""
    generate(tmp_path, "--env", "KukaMovingButtonGymEnv-v0", "--img-shape", "3", "16", "16", "--max-steps", "30",
             "--seed", "3", "--num-episode", "1", "--no-progress", name="moving")
    dataset = Dataset.open(str(tmp_path / "moving"))
    targets = dataset["step_target_positions"]
    assert len(targets) == len(dataset) and np.ptp(targets[:, :2], axis=0).max() > 1e-3  # it moved
    np.testing.assert_array_equal(targets[0], dataset["target_positions"][0])
    # a supervised model learns that state: recorded in its settings, so its recipe is not one made before the fix
    assert dataset.targetMoves() and datasetSizes(dataset, {"supervised": 1.0})["relative_to"]
    # the env in its ground-truth mode, replaying the recorded actions from the same start, observes the same
    kwargs = readJson(tmp_path / "moving" / "env_globals.json")["env_kwargs"]
    env = getEnvClass("KukaMovingButtonGymEnv-v0")(**{**kwargs, "srl_model": "ground_truth",
                                                      "img_shape": tuple(kwargs["img_shape"])})
    observation, _ = env.reset(seed=episodeSeed(3, 0), options={FRESH_WORLD: True})
    observed = [observation]
    for action in dataset["actions"][:-1]:
        observed.append(env.step(action)[0])
    env.close()
    np.testing.assert_allclose(dataset.states(), np.array(observed), atol=1e-5)


def test_a_replayed_agent_on_two_cameras_gets_each_image_resized():
    """A two-camera (--multi-view/--fpv) pixel run recorded at another image size: OpenCV resizes at most 4 channels,
    so the 6-channel frame crashed the workers (cv2 assertion 'cn <= 4'); each camera's image is resized alone."""
    policy = object.__new__(RunPolicy)  # (only its run folder's name, for messages)
    policy.run_dir = "run"
    pixels = np.random.default_rng(0).integers(0, 256, (40, 40, 6), dtype=np.uint8)
    resized = policy._resize(pixels, (6, 32, 32))
    assert resized.shape == (32, 32, 6)
    for first in (0, 3):
        np.testing.assert_array_equal(resized[..., first:first + 3],
                                      cv2.resize(pixels[..., first:first + 3], (32, 32), interpolation=cv2.INTER_AREA))


def test_a_run_that_fails_before_an_episode_leaves_no_partial_folder(tmp_path, monkeypatch):
    """An unexpected error in the recording left an empty partial folder that refused the next run (--resume or
    --force asked for nothing to resume); once an episode is finished the folder is kept for --resume."""
    recordEpisode = dataset_generator.recordEpisode

    def failing(env, policy, spec, episode, partial_dir, **kwargs):
        if episode == failing.at:
            raise RuntimeError("boom")
        return recordEpisode(env, policy, spec, episode, partial_dir, **kwargs)

    monkeypatch.setattr(dataset_generator, "recordEpisode", failing)
    config = dataset_generator.parseConfig(["--save-path", str(tmp_path), "--name", NAME, *SETTINGS[:-3],
                                            "--num-episode", "2", "--no-progress"])
    for failing.at, kept in ((0, False), (1, True)):
        with pytest.raises(RuntimeError, match="boom"):
            dataset_generator.generate(config)
        assert (tmp_path / f".{NAME}.partial").is_dir() is kept and not (tmp_path / NAME).exists()
    failing.at = None
    assert dataset_generator.generate(dataclasses.replace(config, resume=True)) == 0
    assert len(loadArrays(tmp_path / NAME)["rewards"]) == 2 * N_STEPS


def test_a_run_interrupted_before_an_episode_leaves_no_partial_folder(tmp_path, monkeypatch, capsys):
    """A Ctrl-C before the first episode finished kept an empty partial folder ("0 of 2 episodes kept"), nothing to
    resume; once an episode is finished the folder is kept for --resume, as after an error."""
    recordEpisode = dataset_generator.recordEpisode

    def interrupted(env, policy, spec, episode, partial_dir, **kwargs):
        if episode == interrupted.at:
            raise KeyboardInterrupt
        return recordEpisode(env, policy, spec, episode, partial_dir, **kwargs)

    monkeypatch.setattr(dataset_generator, "recordEpisode", interrupted)
    config = dataset_generator.parseConfig(["--save-path", str(tmp_path), "--name", NAME, *SETTINGS[:-3],
                                            "--num-episode", "2", "--no-progress"])
    interrupted.at = 0
    assert dataset_generator.generate(config) == 130
    assert os.listdir(tmp_path) == []
    assert capsys.readouterr().err.strip().splitlines()[-1] == "Interrupted: no episode finished, nothing kept"
    interrupted.at = 1
    assert dataset_generator.generate(config) == 130
    assert (tmp_path / f".{NAME}.partial").is_dir()
    assert "1 of 2 episodes kept" in capsys.readouterr().err


def test_a_joint_recording_started_with_force_down_resumes(tmp_path, monkeypatch):
    """Joint datasets were recorded with force_down, which never changed a joint move; it is left out since, and a
    recording interrupted before that change was refused by --resume (its settings differed) with no flag to match."""
    recordEpisode = dataset_generator.recordEpisode

    def failing(env, policy, spec, episode, partial_dir, **kwargs):
        if episode == 1 and failing.on:
            raise RuntimeError("boom")
        return recordEpisode(env, policy, spec, episode, partial_dir, **kwargs)

    failing.on = True
    monkeypatch.setattr(dataset_generator, "recordEpisode", failing)
    config = dataset_generator.parseConfig(["--save-path", str(tmp_path), "--name", "kj", "--env", "KukaButtonGymEnv-v0",
                                            "-c", "-joints", "--num-episode", "2", "--max-steps", "3",
                                            "--img-shape", "3", "16", "16", "--no-progress"])
    with pytest.raises(RuntimeError, match="boom"):
        dataset_generator.generate(config)
    settings_file = tmp_path / ".kj.partial" / "generation.json"
    settings = json.loads(settings_file.read_text())
    assert "force_down" not in settings["env_kwargs"]
    settings["env_kwargs"]["force_down"] = True  # as the generator wrote it before
    settings_file.write_text(json.dumps(settings))
    failing.on = False
    assert dataset_generator.generate(dataclasses.replace(config, resume=True)) == 0
    assert (tmp_path / "kj").is_dir()


@pytest.mark.parametrize("key,values", [
    ("force_down", (False, True)), ("continuous_actions", (False, True)), ("action_joints", (False, True)),
    ("renderer", ("lowpoly", "tinyrenderer")), ("shape_reward", (True, False)), ("random_target", (False, True)),
    ("max_dist", ("0.28", "0.5")), ("version", (1, 2)), ("run_env_kwargs", ({}, {"relative_pos": False})),
    ("a_later_key", ("x", "y")),  # one added later is compared too: only MAY_DIFFER's keys may differ
    ("multi_view", (None, True)),  # (None: a dataset recorded before the key, one camera)
    ("renderer", (None, "lowpoly")),  # (None: recorded before the key, TinyRenderer's images)
])
def test_fusioner_refuses_datasets_whose_records_mean_other_things(tmp_path, key, values):
    """The merged config is the first source's: a lowpoly and a tinyrenderer dataset merged said "lowpoly", a
    --shape-reward and a sparse one said shape_reward true with both kinds of rewards; a --force-down dataset (action
    5: down) merged with one without (up) gave a dataset that --pretrain-dataset and --gail-dataset took with either
    meaning."""
    generate(tmp_path, "--img-shape", "3", "16", "16", "--max-steps", "5", "--num-episode", "1", "--no-progress",
             name="a")
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    for name, value in zip(("a", "b"), values, strict=True):
        config = readJson(tmp_path / name / "dataset_config.json")
        if value is None:
            config.pop(key)
        else:
            config[key] = value
        (tmp_path / name / "dataset_config.json").write_text(json.dumps(config))
    before = snapshot(tmp_path)
    assertOneLineError(runModule(FUSIONER, "--merge", tmp_path / "a", tmp_path / "b", tmp_path / "merged"),
                       f"their {key} differs (")
    assert snapshot(tmp_path) == before


def test_fusioner_refuses_a_two_camera_and_a_one_camera_dataset(tmp_path):
    """A --multi-view dataset merged with a one-camera one gave a multi_view dataset holding frameNNNNNN.jpg records,
    which srl_models.train then failed to read (frameNNNNNN_1.jpg)."""
    kuka = ["--env", "KukaButtonGymEnv-v0", "--img-shape", "3", "16", "16", "--max-steps", "3", "--num-episode", "1",
            "--no-progress"]
    generate(tmp_path, *kuka, "--multi-view", name="two")
    generate(tmp_path, *kuka, name="one")
    before = snapshot(tmp_path)
    assertOneLineError(runModule(FUSIONER, "--merge", tmp_path / "two", tmp_path / "one", tmp_path / "merged"),
                       "their multi_view differs (True vs False")
    assert snapshot(tmp_path) == before


def test_fusioner_merges_datasets_of_other_seeds_policies_and_sizes(tmp_path):
    small = ["--img-shape", "3", "16", "16", "--max-steps", "5", "--no-progress"]
    generate(tmp_path, *small, "--num-episode", "1", name="a")
    generate(tmp_path, *small, "--num-episode", "2", "--seed", "12", name="b")  # (a copy: the same episodes, refused)
    config = readJson(tmp_path / "b" / "dataset_config.json")
    config.update(policy="logs/some/run")
    (tmp_path / "b" / "dataset_config.json").write_text(json.dumps(config))
    result = runModule(FUSIONER, "--merge", tmp_path / "a", tmp_path / "b", tmp_path / "merged")
    assert result.returncode == 0, result.stderr
    merged = readJson(tmp_path / "merged" / "dataset_config.json")
    assert [source["policy"] for source in merged["merged_from"]] == ["random", "logs/some/run"]


def test_a_resume_with_other_settings_names_them(tmp_path):
    """The refusal names each setting that differs with the value the recording was started with and the one given
    now (it named the settings alone: the user had to guess what to resume with)."""
    config = dataset_generator.parseConfig(["--save-path", str(tmp_path), "--name", "r", "--num-episode", "2",
                                            "--max-steps", "3", "--img-shape", "3", "16", "16", "--no-progress"])
    spec, _, _ = dataset_generator.validate(config)
    (tmp_path / ".r.partial" / "episodes").mkdir(parents=True)
    (tmp_path / ".r.partial" / "generation.json").write_text(json.dumps(spec.settings()))
    before = snapshot(tmp_path)
    for changes, words in (({"seed": 1}, "(seed was 0, now 1)"),
                           ({"seed": 1, "max_steps": 4}, "(env_kwargs.max_steps was 3, now 4; seed was 0, now 1)"),
                           ({"img_shape": [3, 32, 32]}, "(env_kwargs.img_shape was [3, 16, 16], now [3, 32, 32])")):
        with pytest.raises(UsageError, match=re.escape(f"other settings {words}: resume")):
            dataset_generator.generate(dataclasses.replace(config, resume=True, **changes))
        assert sorted(os.listdir(tmp_path / ".r.partial")) == ["episodes", "generation.json"]
    assert snapshot(tmp_path) == before


def test_a_refused_run_leaves_no_lock_file_in_a_partial_folder(tmp_path):
    """A refused call left a ``.lock`` in an existing ``.NAME.partial`` that was not the generator's (and in an
    interrupted recording that had none): the lock it takes to check the folder is removed with the refusal."""
    foreign = tmp_path / ".f.partial"
    foreign.mkdir()
    (foreign / "mine.txt").write_text("not a recording")
    config = dataset_generator.parseConfig(["--save-path", str(tmp_path), "--name", "f", "--num-episode", "1",
                                            "--max-steps", "3", "--img-shape", "3", "16", "16", "--no-progress"])
    for flags, words in (({}, "an interrupted run left"), ({"resume": True}, "has no readable generation.json")):
        with pytest.raises(UsageError, match=words):
            dataset_generator.generate(dataclasses.replace(config, **flags))
        assert sorted(os.listdir(foreign)) == ["mine.txt"]
        assert sorted(os.listdir(tmp_path)) == [".f.partial"]
    (foreign / ".lock").write_text("")  # a lock file that was there stays
    with pytest.raises(UsageError, match="an interrupted run left"):
        dataset_generator.generate(config)
    assert sorted(os.listdir(foreign)) == [".lock", "mine.txt"]
