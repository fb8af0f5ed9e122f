"""Cross-platform file locks (srl_toolbox.locks): exclusive between processes, dropped when the holder dies, and
the commands that use them refuse a second writer with a one-line error."""
import os
import subprocess
import sys
import textwrap

from environments.partial_folder import LOCK_FILE
from srl_toolbox.locks import acquireLock, lockPathFor, tryLock

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _holder(path: str) -> subprocess.Popen:
    """A process that takes the lock on ``path``, says so on stdout, and holds it until killed."""
    code = textwrap.dedent(f"""
        import sys, time
        from srl_toolbox.locks import tryLock
        lock = tryLock({path!r})
        print("held" if lock is not None else "refused", flush=True)
        time.sleep(600)
    """)
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=ENV, cwd=ROOT)
    assert process.stdout.readline().strip() == "held"
    return process


def test_lock_is_exclusive_between_processes_and_dropped_when_the_holder_dies(tmp_path):
    path = str(tmp_path / "run.lock")
    holder = _holder(path)
    try:
        assert tryLock(path) is None
        assert tryLock(path, wait=0.2) is None
    finally:
        holder.kill()
        holder.wait()
    lock = tryLock(path, wait=5)  # the OS dropped the dead holder's lock, although its file is still there
    assert lock is not None
    try:
        assert tryLock(path) is None  # a second lock object of the same process is refused too
    finally:
        lock.release()
    again = acquireLock(path)
    again.release()


def test_lock_path_for_a_target_is_outside_its_folder_and_spelling_independent(tmp_path):
    target = tmp_path / "report.md"
    assert lockPathFor(str(target)) == lockPathFor(os.path.join(str(tmp_path), ".", "report.md"))
    assert not lockPathFor(str(target)).startswith(str(tmp_path))
    assert lockPathFor(str(target)) != lockPathFor(str(tmp_path / "other.md"))


GENERATOR = [sys.executable, "-m", "environments.dataset_generator", "--name", "data", "--num-episode", "1",
             "--no-progress"]


def _generatorWhileLocked(partial, args: list[str]) -> subprocess.CompletedProcess:
    """:return: the dataset generator's run with ``args`` while another process holds ``partial``'s lock"""
    holder = _holder(str(partial / LOCK_FILE))
    try:
        return subprocess.run(args, capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=300)
    finally:
        holder.kill()
        holder.wait()


def test_dataset_generator_refuses_a_partial_folder_another_process_writes(tmp_path):

    partial = tmp_path / ".data.partial"
    partial.mkdir()
    (partial / "settings.json").write_text("{}")
    result = _generatorWhileLocked(partial, [*GENERATOR, "--save-path", str(tmp_path), "--resume"])
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"error: {partial} is being written by another dataset_generator process"]


def test_a_second_generator_on_the_same_dataset_is_told_another_process_writes_it(tmp_path):
    """Without --resume or --force: the partial folder is not an interrupted run's while its lock is held."""
    partial = tmp_path / ".data.partial"
    partial.mkdir()
    (partial / "settings.json").write_text("{}")
    args = [*GENERATOR, "--save-path", str(tmp_path)]
    held = _generatorWhileLocked(partial, args)
    assert held.returncode == 2, held.stderr
    assert held.stderr.strip().splitlines() == [
        f"error: {partial} is being written by another dataset_generator process"]
    # once no process holds it, it is an interrupted run's
    interrupted = subprocess.run(args, capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=300)
    assert interrupted.returncode == 2, interrupted.stderr
    assert interrupted.stderr.strip().splitlines() == [
        f"error: an interrupted run left {partial}: pass --resume to finish it or --force to discard it"]
    assert sorted(os.listdir(partial)) == sorted([LOCK_FILE, "settings.json"])


def test_benchmark_report_appends_from_two_processes_keep_both_sections(tmp_path):
    sections = 2
    report = tmp_path / "benchmarks.md"
    code = textwrap.dedent("""
        import sys
        from benchmarks.documents import appendReport
        appendReport(f"Section {sys.argv[1]}", "cmd", "notes", "| a |", packages=(), path=sys.argv[2], target="bench")
    """)
    processes = [subprocess.Popen([sys.executable, "-c", code, str(index), str(report)], env=ENV, cwd=ROOT)
                 for index in range(sections)]
    assert [process.wait(timeout=120) for process in processes] == [0] * sections
    text = report.read_text()
    assert all(f"## Section {index} (" in text for index in range(sections))
    assert not [name for name in os.listdir(tmp_path) if name != "benchmarks.md"]
