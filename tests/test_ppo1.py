"""ppo1 (PPO on torch.distributed workers): K workers make the same update as one on the union of their batches,
it learns CartPole with two workers, its model file round-trips, and its flags are checked."""
from __future__ import annotations

import csv
import glob
import json
import os
import re
import signal
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np
import pytest
import torch
import torch.multiprocessing as mp
from conftest import REPO, interruptThenResume, runFolder, runModule, runTrain, startModule, trainArgs
from ppo1_failing_worker import failingWorker
from ppo1_spawned import ACTION_SPACES, BOX_OBS, OnCartPole, batch, freshModel, updateOnShare

from rl_baselines.rl_algorithm import ppo1_workers
from rl_baselines.rl_algorithm.acer import ACERModel
from rl_baselines.rl_algorithm.acktr import ACKTRModel
from rl_baselines.rl_algorithm.ppo1 import PPO1Model, distUrlRefusal, freeDistUrl, ppoUpdate
from rl_baselines.rl_algorithm.ppo1_workers import LocalWorkers
from rl_baselines.runs import train
from rl_baselines.runs.monitor_files import loadEpisodes
from srl_toolbox.cli import UsageError

pytestmark = pytest.mark.slow  # whole trainings or sweeps: left out of `make test-fast`


@pytest.fixture(autouse=True)
def _oneThread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_two_workers_equal_one_worker_on_the_union(tmp_path):
    """Two gloo processes, each on half of a batch, make the update one process makes on the whole batch."""
    context = mp.get_context("spawn")
    url = freeDistUrl()
    processes = [context.Process(target=updateOnShare, args=(rank, 2, url, str(tmp_path))) for rank in range(2)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=300)  # the bound guards a hang: a loaded machine took 70 s to spawn the two
        assert process.exitcode == 0
    for kind, action_space in ACTION_SPACES.items():
        single = freshModel(action_space)
        before = {name: value.clone() for name, value in single.policy.state_dict().items()}
        ppoUpdate(single.policy, single.optimizer, batch(action_space), single.hyperparams, 1e-3)
        expected = single.policy.state_dict()
        for rank in range(2):
            params = torch.load(tmp_path / f"{kind}_rank{rank}.pt", weights_only=True)
            for name, value in params.items():
                torch.testing.assert_close(value, expected[name], atol=1e-6, rtol=1e-5, msg=f"{kind} {name}")
        # Adam moves almost every parameter by ~lr per step: far beyond the tolerance, the comparison is not
        # vacuous. (lr 1e-3: Adam divides by sqrt(v), so float-order noise in near-zero gradients grows with lr.)
        assert max((expected[name] - before[name]).abs().max().item() for name in before) > 1e-3


def test_learns_cartpole_with_two_workers():
    episode_rewards: list[float] = []
    counts: list[int] = []

    def callback(_locals, _globals) -> bool:
        counts.append(_locals["self"].num_timesteps)
        episode_rewards.extend(info["episode"]["r"] for info in _locals["infos"] if "episode" in info)
        return not (len(episode_rewards) >= 20 and np.mean(episode_rewards[-20:]) >= 160)

    model = OnCartPole()
    args = trainArgs(seed=0, num_timesteps=60_000, num_cpu=2, load_rl_model_path=None, num_workers=2,
                     dist_url=None, rank=0, world_size=None)
    model.train(args, callback, train_kwargs={"learning_rate": 3e-3, "nminibatches": 4, "optim_epochs": 4})
    # Rank 0 steps 2 envs; the global count grows by both workers' steps.
    assert counts[1] - counts[0] == 4
    assert np.mean(episode_rewards[-20:]) > 150, f"{model.num_timesteps} steps, last {episode_rewards[-20:]}"


def test_save_load_same_actions_and_probabilities(tmp_path):
    model = freshModel(gym.spaces.Discrete(3))
    ppoUpdate(model.policy, model.optimizer, batch(gym.spaces.Discrete(3)), model.hyperparams, 1e-2)
    path = str(tmp_path / "ppo1_model.pt")
    model.save(path)
    loaded = PPO1Model.load(path)
    obs = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    np.testing.assert_array_equal(loaded.getAction(obs, deterministic=True), model.getAction(obs, deterministic=True))
    proba = loaded.getActionProba(obs)
    np.testing.assert_allclose(proba, model.getActionProba(obs))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-6)
    assert loaded.hyperparams["learning_rate"] == 1e-2
    # The optimizer state is kept too, so a continued training goes on from it.
    assert loaded.optimizer.state_dict()["state"][0]["step"] == model.optimizer.state_dict()["state"][0]["step"]


def test_bad_num_workers_is_a_usage_error():
    result = runModule("rl_baselines.train", "--no-vis", "--no-progress", "--algo", "ppo1", "--env",
                       "MobileRobotGymEnv-v0", "--num-workers", "0")
    assert result.returncode == 2
    assert "--num-workers" in result.stderr.strip().splitlines()[-1]


def test_train_command_two_workers_and_continue(tmp_path):
    """The train command with two local workers, then training continued from its model."""
    common = ("--algo", "ppo1", "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth", "--log-dir",
              str(tmp_path), "--seed", "0", "--timesteps-per-actorbatch", "32")
    run_dir = runFolder(runTrain(*common, "--num-timesteps", "1088", "--num-workers", "2"))
    model_path = os.path.join(run_dir, "ppo1_model.pt")
    assert PPO1Model.load(model_path).num_timesteps == 1088  # both workers' steps: 17 rollouts of 2 x 32
    assert sorted(os.listdir(os.path.join(run_dir, "monitor"))) == ["0.monitor.csv", "1.monitor.csv"]  # a rank each
    # progress.csv's episode means hold both ranks' episodes that ended by the row's step (rank 1 writes its monitor
    # rows between updates, after rank 0's last refresh), as SB3's rows do
    rows = [row for row in csv.DictReader(open(os.path.join(run_dir, "progress.csv"))) if row["rollout/ep_rew_mean"]]
    episodes = loadEpisodes(os.path.join(run_dir, "monitor"))
    assert [int(row["time/total_timesteps"]) for row in rows] == [1024, 1088]  # the last: the run's end
    assert list(episodes["timesteps"]) == [250, 500, 750, 1000]  # all 4 ended by the row: 2 on each rank
    assert float(rows[0]["rollout/ep_rew_mean"]) == pytest.approx(float(np.mean(episodes["rewards"])))
    second = runFolder(runTrain(*common, "--num-timesteps", "128", "--load-rl-model-path", model_path))
    assert PPO1Model.load(os.path.join(second, "ppo1_model.pt")).num_timesteps == 1088 + 128


# progress.csv's training rows (their steps) of runs whose step count is not, or is, a logging step: the updates after
# the last LOG_INTERVAL row get a row at the run's end, and a run whose last update wrote its row gets no second one.
LAST_ROWS = {
    "ppo1-1000": (["--algo", "ppo1", "--num-timesteps", "1000", "--timesteps-per-actorbatch", "250"], [1000]),
    "ppo1-1024": (["--algo", "ppo1", "--num-timesteps", "1024", "--timesteps-per-actorbatch", "256"], [1024]),
    "acktr-1500": (["--algo", "acktr", "--num-timesteps", "1500"], [1000, 1500]),
    "acer-1000": (["--algo", "acer", "--num-timesteps", "1000"], [1000]),
}


@pytest.mark.parametrize("case", sorted(LAST_ROWS))
def test_the_end_of_the_step_count_writes_the_last_training_row(tmp_path, case):
    args, steps = LAST_ROWS[case]
    result = train.trainCommand(["--no-vis", "--no-progress", "--env", "MobileRobotGymEnv-v0", "--srl-model",
                                 "ground_truth", "--seed", "3", "--log-dir", str(tmp_path), *args])
    assert result.exit_code == 0
    with open(os.path.join(result.run_dir, "progress.csv"), encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [int(row["time/total_timesteps"]) for row in rows] == steps
    assert all(any(value for name, value in row.items() if name.startswith("train/")) for row in rows)


def test_worker_joins_through_dist_url(tmp_path):
    """What spans machines: a rank-0 train command and workers that only work, joined by --dist-url: a `--rank 1`
    train command given another --log-dir and the Python API's trainAgent as rank 2 given rank 0's. The workers write
    nothing: rank 0's run folder is the only one (the API's worker wrote a run folder of its own)."""
    url = freeDistUrl()
    common = ("--no-vis", "--no-progress", "--algo", "ppo1", "--env", "MobileRobotGymEnv-v0", "--srl-model",
              "ground_truth", "--seed", "0", "--timesteps-per-actorbatch", "32", "--num-timesteps", "288",
              "--world-size", "3", "--dist-url", url)  # 3 rollouts of 3 x 32 steps
    api_worker = ("from rl_baselines.api import makeConfig, trainAgent\n"
                  "trainAgent(makeConfig(algo='ppo1', env='MobileRobotGymEnv-v0', srl_model='ground_truth', seed=0, "
                  f"timesteps_per_actorbatch=32, num_timesteps=288, world_size=3, dist_url={url!r}, rank=2, "
                  f"vis=False, progress=False, log_dir={str(tmp_path / 'main')!r}))")
    commands = {1: ["-m", "rl_baselines.train", *common, "--rank", "1", "--log-dir", str(tmp_path / "worker")],
                2: ["-c", api_worker]}
    workers = {rank: subprocess.Popen([sys.executable, *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True, cwd=REPO) for rank, command in commands.items()}
    try:
        run_dir = runFolder(runTrain(*common, "--log-dir", tmp_path / "main"))
        outputs = {rank: worker.communicate(timeout=120) for rank, worker in workers.items()}
    finally:
        for worker in workers.values():
            worker.kill()
    assert PPO1Model.load(os.path.join(run_dir, "ppo1_model.pt")).num_timesteps == 288
    for rank, (worker_out, worker_err) in outputs.items():
        assert workers[rank].returncode == 0, worker_err
        assert f"Worker: rank {rank} of 3 in the run rank 0's process writes (process group {url})" in worker_out
        assert "Run folder" not in worker_out and "Done (worker): 288 steps" in worker_out
    assert os.listdir(os.path.dirname(run_dir)) == [os.path.basename(run_dir)]  # no worker made a folder
    assert not os.path.exists(tmp_path / "worker")


BAD_WORKER_FLAGS = {
    "rank-not-below-world-size": (["--rank", "2", "--world-size", "2", "--dist-url", "tcp://127.0.0.1:29999"],
                                  ["--rank 2", "--world-size 2", "0..1"]),
    "more-workers-than-world-size": (["--num-workers", "3", "--world-size", "2"], ["--num-workers 3", "1..2"]),
    "rank-without-dist-url": (["--rank", "1", "--world-size", "2"], ["--rank 1", "--dist-url tcp://HOST:PORT"]),
    "dist-url-garbage": (["--num-workers", "2", "--dist-url", "garbage"], ["'garbage'", "tcp://HOST:PORT"]),
    "dist-url-port-out-of-range": (["--num-workers", "2", "--dist-url", "tcp://127.0.0.1:99999"],
                                   ["'tcp://127.0.0.1:99999'", "port 1..65535"]),
    "dist-url-no-port": (["--num-workers", "2", "--dist-url", "tcp://127.0.0.1"], ["'tcp://127.0.0.1'"]),
    "file-url-missing-folder": (["--num-workers", "2", "--dist-url", "file:///no/such/folder/pg"], ["file:///PATH"]),
    "more-minibatches-than-samples": (["--nminibatches", "256"], ["nminibatches 256", "128 samples", "1..128"]),
    "more-minibatches-than-samples-2-envs": (["--nminibatches", "257", "--num-cpu", "2"], ["256 samples", "1..256"]),
}


@pytest.mark.parametrize("case", sorted(BAD_WORKER_FLAGS))
def test_bad_worker_flags_are_refused_before_anything_is_written(tmp_path, case):
    """Checked by the train command's validation: one line, no run folder (they used to be found in train, after
    the run folder was written; a bad --dist-url gave a traceback, too many minibatches one at the first update)."""
    flags, words = BAD_WORKER_FLAGS[case]
    with pytest.raises(UsageError) as error:
        train.trainCommand(["--no-vis", "--no-progress", "--algo", "ppo1", "--env", "MobileRobotGymEnv-v0",
                            "--srl-model", "ground_truth", "--num-timesteps", "500", "--log-dir", str(tmp_path),
                            *flags])
    message = str(error.value)
    assert "\n" not in message and all(word in message for word in words), message
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("url", ["tcp://127.0.0.1:29500", "tcp://[::1]:1", "tcp://node-3.cluster:65535"])
def test_dist_url_spellings_torch_documents_are_accepted(tmp_path, url, monkeypatch):
    assert distUrlRefusal(url) is None
    assert distUrlRefusal(f"file://{tmp_path}/pg") is None
    assert distUrlRefusal("env://") is not None  # MASTER_ADDR, MASTER_PORT unset
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "29500")
    assert distUrlRefusal("env://") is None


@pytest.mark.parametrize("signum, num_cpu", [(signal.SIGINT, 2), (signal.SIGTERM, 1)], ids=["SIGINT", "SIGTERM"])
def test_signal_to_the_process_group_stops_with_a_checkpoint(tmp_path, signum, num_cpu):
    """SIGINT (a terminal's Ctrl-C; 2 workers of 2 env subprocesses each) or SIGTERM (2 workers of 1 env each) to the
    whole process group of a run: rank 0 stops every rank, with a checkpoint at the end of the update in progress,
    exit 130 or 143, no traceback (the worker and the env subprocesses used to die of it: two tracebacks, gloo's "Connection
    closed by peer", exit 1; and the printed count, the workers' whole rollouts included, was not the checkpoint's)."""
    # its own process group (start_new_session), which the signal is sent to
    process = startModule("rl_baselines.train", "--no-vis", "--no-progress", "--algo", "ppo1", "--env",
                          "MobileRobotGymEnv-v0", "--srl-model", "ground_truth", "--num-timesteps", "20000",
                          "--num-workers", "2", "--num-cpu", num_cpu, "--timesteps-per-actorbatch", "50",
                          "--checkpoint-freq", "200", "--seed", "7", "--log-dir", tmp_path, start_new_session=True)
    try:
        pattern = os.path.join(glob.escape(str(tmp_path)), "*", "*", "*", "*", "checkpoints", "*_steps")
        while not glob.glob(pattern) and process.poll() is None:
            time.sleep(0.2)
        assert process.poll() is None, process.communicate()
        os.killpg(process.pid, signum)
        out, err = process.communicate(timeout=180)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    assert process.returncode == 128 + signum, err
    assert "Traceback" not in err and "Error" not in err, err
    (stopped,) = re.findall(r"^Stopped: (\d+) steps", out, re.MULTILINE)
    (checkpoint,) = re.findall(r"^Checkpoint: (\S+);", out, re.MULTILINE)
    # at the end of the update in progress (a clean point); the ranks stopped one step of their envs later
    checkpoint_steps = int(re.fullmatch(r"(\d+)_steps", os.path.basename(checkpoint)).group(1))
    assert checkpoint_steps + 2 * num_cpu == int(stopped), out
    with open(os.path.join(checkpoint, "manifest.json"), encoding="utf-8") as handle:
        assert json.load(handle)["stopped_by"] == signal.Signals(signum).name
    assert PPO1Model.load(os.path.join(checkpoint, "ppo1_model.pt")).num_timesteps == checkpoint_steps


def test_every_worker_writes_monitor_files_that_add_up_to_the_step_count(tmp_path, monkeypatch):
    """Each worker's episodes are in the run's monitor folder (only rank 0's were: half the steps with 2 workers), so
    that the episode lengths add up to the step count, also after a resume from a checkpoint between episodes (the
    files are cut back to the checkpoint and continued). MobileRobot episodes last 250 steps, one per rollout."""
    run_args = ["--algo", "ppo1", "--env", "MobileRobotGymEnv-v0", "--srl-model", "ground_truth", "--seed", "3",
                "--num-timesteps", "1000", "--num-workers", "2", "--timesteps-per-actorbatch", "250",
                "--checkpoint-freq", "500"]
    run_dir = interruptThenResume(monkeypatch, str(tmp_path), run_args, 700)  # resumed from 500
    monitor = os.path.join(run_dir, "monitor")
    assert sorted(os.listdir(monitor)) == ["0.monitor.csv", "1.monitor.csv"]
    episodes = loadEpisodes(monitor)
    assert episodes["lengths"].tolist() == [250] * 4
    assert PPO1Model.load(os.path.join(run_dir, "ppo1_model.pt")).num_timesteps == 1000
    with open(os.path.join(monitor, "1.monitor.csv"), encoding="utf-8") as handle:  # the worker's, continued
        handle.readline()
        times = [float(row["t"]) for row in csv.DictReader(handle)]
    assert len(times) == 2 and times[1] > times[0]


# The train command with a worker that fails (spawned workers run this script's module level too, so the patch
# reaches them): at its env (before it joins the group), or killed by SIGKILL after its 4th update (mid-run, after
# rank 0's checkpoints at 200 and 400 steps: 2 workers x 50 steps an update).
FAILING_WORKER = '''
import os, signal
from rl_baselines.rl_algorithm.ppo1 import PPO1Model
from rl_baselines.train import commandMain
from srl_toolbox.cli import runCommand

_makeTrainingEnv, _logStats = PPO1Model.makeTrainingEnv.__func__, PPO1Model.logStats

def makeTrainingEnv(cls, settings, env_kwargs=None):
    if os.environ["FAIL_AT"] == "env" and int(settings.option("rank", 0)) > 0:
        raise RuntimeError("no env for this worker")
    return _makeTrainingEnv(cls, settings, env_kwargs)

def logStats(self, stats):
    if os.environ["FAIL_AT"] == "update" and self.rank > 0 and self.updates == 4:
        os.kill(os.getpid(), signal.SIGKILL)
    _logStats(self, stats)

PPO1Model.makeTrainingEnv, PPO1Model.logStats = classmethod(makeTrainingEnv), logStats
if __name__ == "__main__":
    runCommand(commandMain)
'''


def test_a_worker_that_ends_between_two_waits_is_still_the_failure(monkeypatch):
    """The watcher's wait times out just as the last worker ends: the next look finds no worker alive, and must
    still record the failure (else rank 0 waits for the group until gloo's timeout)."""
    real_wait = ppo1_workers.connection.wait

    def missed(objects, timeout=None):
        if timeout != LocalWorkers.POLL_S:  # (Connection.poll waits through the same function)
            return real_wait(objects, timeout)
        real_wait(objects)  # the worker ends ...
        return []  # ... just after the watcher's wait timed out

    monkeypatch.setattr(ppo1_workers.connection, "wait", missed)
    workers = LocalWorkers(failingWorker, 2, "x")
    try:
        workers.watcher.join(timeout=120)
        assert workers.failure == "ppo1 worker rank 1 failed (exit code 3): RuntimeError: rank 1 gives up"
    finally:
        workers.stop(wait=False)
        workers.close()


def test_a_worker_seen_ended_before_it_can_be_reaped_is_still_the_failure():
    """A dead worker's sentinel can be ready a moment before a non-blocking wait sees it exit (CI once caught rank 0,
    broken in a collective by the dead worker, finding no failure and ending in gloo's traceback): here the
    non-blocking wait never sees it, and rank 0's stop must still name the failure."""
    workers = LocalWorkers(failingWorker, 2, "x")
    popen = workers.processes[1]._popen
    real_poll = popen.poll
    popen.poll = lambda flag=os.WNOHANG: None if flag == os.WNOHANG and popen.returncode is None else real_poll(flag)
    try:
        assert ppo1_workers.connection.wait([workers.processes[1].sentinel], timeout=120)
        assert workers.stop(wait=True) == "ppo1 worker rank 1 failed (exit code 3): RuntimeError: rank 1 gives up"
    finally:
        workers.stop(wait=False)
        workers.close()


@pytest.mark.parametrize("fail_at, message", [
    ("env", "ppo1 worker rank 1 failed (exit code 1): RuntimeError: no env for this worker; the run stopped"),
    ("update", "ppo1 worker rank 1 was killed by SIGKILL; the run stopped")])
def test_a_dead_worker_ends_the_run_at_once_in_one_line(tmp_path, fail_at, message):
    """A worker that dies before the group forms, or mid-run, ends the run with one line naming it, exit 1 (rank 0
    used to wait for the group until gloo's timeout, 30 minutes, deaf to Ctrl-C; a death mid-run was rank 0's
    traceback of gloo's "Connection closed by peer"). The run folder is a killed run's: --resume finishes it."""
    script = tmp_path / "failing_worker.py"
    script.write_text(FAILING_WORKER, encoding="utf-8")
    log_dir = tmp_path / "logs"
    command = [sys.executable, str(script), "--no-vis", "--no-progress", "--algo", "ppo1", "--env",
               "MobileRobotGymEnv-v0", "--srl-model", "ground_truth", "--num-timesteps", "600", "--num-workers", "2",
               "--timesteps-per-actorbatch", "50", "--checkpoint-freq", "200", "--seed", "5", "--log-dir",
               str(log_dir)]
    env = {**os.environ, "FAIL_AT": fail_at, "PYTHONPATH": REPO}
    # its own process group, killed if it hangs (the bound guards a hang, it measures nothing)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=env,
                               start_new_session=True)
    try:
        out, err = process.communicate(timeout=150)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    assert process.returncode == 1, err
    assert err.strip().splitlines()[-1] == f"error: {message}", err
    assert "Traceback" not in err, err
    run_dir = runFolder(subprocess.CompletedProcess(command, 1, out, err))
    checkpoints = sorted(os.listdir(os.path.join(run_dir, "checkpoints"))) if fail_at == "update" else []
    assert checkpoints == (["200_steps", "400_steps"] if fail_at == "update" else []), checkpoints
    if fail_at == "update":  # resumed from its last checkpoint, with a worker that lives
        result = runTrain("--resume", run_dir)
        assert "Done: 600 steps" in result.stdout, result.stdout
        assert PPO1Model.load(os.path.join(run_dir, "ppo1_model.pt")).num_timesteps == 600


@pytest.mark.parametrize("algo_class", [PPO1Model, ACKTRModel, ACERModel])
def test_a_truncated_episode_gets_the_value_of_its_last_observation(algo_class):
    """Only an env the time limit cut (with its terminal observation) gets gamma x V(last observation)."""
    torch.manual_seed(0)
    model = algo_class()
    model.setup(BOX_OBS, gym.spaces.Discrete(2), {})
    last = np.arange(4, dtype=np.float32)
    infos = [{"TimeLimit.truncated": True, "terminal_observation": last}, {"terminal_observation": last},
             {"TimeLimit.truncated": True, "terminal_observation": last}, {}]
    rewards = np.ones(4, dtype=np.float32)
    model.bootstrapTruncated(rewards, np.array([True, True, False, False]), infos, 0.5)
    value = float(model.stateValues(last[None])[0])
    assert value != 0 and rewards.tolist() == [np.float32(1 + 0.5 * value), 1.0, 1.0, 1.0]
