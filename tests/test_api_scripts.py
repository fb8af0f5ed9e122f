"""A script that calls the Python API at import, outside ``if __name__ == "__main__":``: the env worker processes
(started by forkserver, which imports the script again in each) refuse in one line each and write nothing, and the
parent's error says why; the same script under the guard trains."""
from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
from conftest import REPO

from rl_baselines import api
from rl_baselines.envs import factory

CALL = ('rl.trainAgent(algo="ppo2", env="MobileRobotGymEnv-v0", srl_model="ground_truth", num_timesteps=64, '
        'num_cpu=2, vec_env="subproc", log_dir="logs", progress=False, vis=False)')


def _runScript(folder, body: str) -> subprocess.CompletedProcess:
    (folder / "script.py").write_text(f"import rl_baselines as rl\n{body}\n")
    return subprocess.run([sys.executable, "script.py"], cwd=folder, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": REPO})


def _runFolders(folder) -> list[str]:
    parent = folder / "logs" / "MobileRobotGymEnv-v0" / "ground_truth" / "ppo2"
    return sorted(os.listdir(parent)) if parent.exists() else []


@pytest.mark.slow
def test_a_script_that_trains_at_import_is_refused_by_its_workers_in_one_line_each(tmp_path):
    """Each env worker imported the script again and trained in a run folder of its own (five run folders for one
    call with ppo2's four envs), then failed with multiprocessing's RuntimeError, and the parent with a
    ConnectionResetError."""
    (tmp_path / "bare").mkdir()
    result = _runScript(tmp_path / "bare", CALL)
    assert result.returncode == 1, result.stderr
    refusals = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(refusals) == 2 and refusals[0] == refusals[1], result.stderr  # one per worker
    assert refusals[0] == (f"error: rl_baselines.trainAgent() was called in a worker process as it imported "
                           f"{str(tmp_path / 'bare' / 'script.py')!r}, the script that started it (multiprocessing's "
                           "spawn and forkserver workers import it again): put the script's calls under `if __name__ "
                           '== "__main__":`')
    assert result.stderr.rstrip().endswith("RuntimeError: the env worker processes ended as they started, before "
                                           "building their envs (exit code 1): the lines they printed above say why")
    assert "ConnectionResetError" not in result.stderr and "bootstrapping" not in result.stderr
    assert len(_runFolders(tmp_path / "bare")) == 1  # the script's own, as any run whose envs fail leaves it
    (tmp_path / "guarded").mkdir()
    result = _runScript(tmp_path / "guarded", f'if __name__ == "__main__":\n    {CALL}')
    assert result.returncode == 0, result.stderr
    assert len(_runFolders(tmp_path / "guarded")) == 1


@pytest.mark.parametrize("name, call", [
    ("trainAgent", lambda folder: api.trainAgent(algo="ppo2", env="MobileRobotGymEnv-v0", srl_model="ground_truth",
                                                 num_timesteps=64, log_dir=str(folder))),
    ("evaluateAgent", lambda folder: api.evaluateAgent(str(folder))),
    ("runSweep", lambda folder: api.runSweep(algo="ppo2", env="MobileRobotGymEnv-v0", srl_model="ground_truth",
                                             num_timesteps=64, log_dir=str(folder))),
])
def test_the_api_refuses_in_a_worker_importing_its_script(tmp_path, monkeypatch, capsys, name, call):
    monkeypatch.setattr(multiprocessing.current_process(), "_inheriting", True, raising=False)
    with pytest.raises(SystemExit) as refusal:
        call(tmp_path / "logs")
    assert refusal.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: rl_baselines.{name}() was called in a worker process as it imported the script, ")
    assert err.count("\n") == 1 and not (tmp_path / "logs").exists()


def test_workers_that_ended_at_start_are_named_only_when_each_exited_of_itself():
    def venv(*codes):
        return SimpleNamespace(processes=[SimpleNamespace(exitcode=code) for code in codes])

    assert str(factory._endedAtStart(venv(1, 1))) == ("the env worker processes ended as they started, before "
                                                      "building their envs (exit code 1): the lines they printed "
                                                      "above say why")
    assert "(exit code 1, 2)" in str(factory._endedAtStart(venv(2, 1, 1)))
    for codes in ((1, -9), (1, None), (0, 1), ()):  # killed by a signal, still running, or none: the pipe's error
        assert factory._endedAtStart(venv(*codes)) is None
