"""The files the benchmarks share: the run archive (benchmarks.archive) and the doc writer (benchmarks.documents)."""
from __future__ import annotations

import configparser
import importlib.util
import json
import os
import re

import pytest
from conftest import REPO

from benchmarks.archive import ArchiveError, loadRecords, writeRecords
from benchmarks.documents import (
    BENCH_FILE,
    appendReport,
    makeNote,
    recordedCommand,
    replaceHeadingSection,
    replaceMarkedSection,
    rewriteDocument,
)


def test_the_archive_is_rewritten_atomically_and_only_when_a_record_changes(tmp_path) -> None:
    path = str(tmp_path / "runs.json")
    assert loadRecords(path) == {}
    archive, changed = writeRecords(path, {"b": {"value": 1, "machine": "here"}, "a": {"value": (2, 3)}},
                                    not_compared=("machine",))
    assert sorted(changed) == ["a", "b"] and archive["a"] == {"value": [2, 3]}  # as JSON holds it
    text = open(path).read()
    assert text == json.dumps(loadRecords(path), indent=2, sort_keys=True) + "\n" and text.index('"a"') < text.index('"b"')
    inode, modified = os.stat(path).st_ino, os.stat(path).st_mtime_ns
    # the same records again, or one seen on another machine: the file is left alone
    assert writeRecords(path, {"a": {"value": [2, 3]}, "b": {"value": 1, "machine": "there"}},
                        not_compared=("machine",))[1] == []
    assert (os.stat(path).st_ino, os.stat(path).st_mtime_ns) == (inode, modified)
    # a new result replaces the record, a dropped key goes; the file is replaced in one rename, nothing left beside it
    archive, changed = writeRecords(path, {"b": {"value": 5}}, dropped=["a", "absent"])
    assert changed == ["a", "b"] and archive == {"b": {"value": 5}} == loadRecords(path)
    assert os.stat(path).st_ino != inode and os.listdir(tmp_path) == ["runs.json"]


@pytest.mark.parametrize("text, message", [("[1]", "not a JSON object of run records"), ("{", "cannot be read as JSON"),
                                           ('{"k": 3}', "the record 'k' not a JSON object"),
                                           ('{"k": {}}', "the record 'k' lacks x")])
def test_a_broken_archive_is_refused(tmp_path, text, message) -> None:
    path = tmp_path / "runs.json"
    path.write_text(text)
    with pytest.raises(ArchiveError, match=message):
        loadRecords(str(path), lambda record: None if "x" in record else "lacks x")
    with pytest.raises(ArchiveError):
        writeRecords(str(path), {"new": {"x": 1}}, check=lambda record: None if "x" in record else "lacks x")
    assert path.read_text() == text


def test_sections_are_replaced_in_place_and_the_rest_kept(tmp_path) -> None:
    text = "# Doc\n\n## Table\n\nold table\n\n## Later\n\nkept\n"
    replaced = replaceHeadingSection(text, "## Table", "## Table\n\nnew table\n")
    assert replaced == "# Doc\n\n## Table\n\nnew table\n\n## Later\n\nkept\n"
    assert replaceHeadingSection("# Doc\n", "## Table", "## Table\n\nt\n") == "# Doc\n\n## Table\n\nt\n"
    start, end = "<!-- s -->", "<!-- e -->"
    marked = replaceMarkedSection(replaced, "one", "## Marked", start, end)
    assert marked == replaced + f"\n## Marked\n\n{start}\none\n{end}\n"
    assert replaceMarkedSection(marked, "two\n", "## Marked", start, end) == replaced + f"\n## Marked\n\n{start}\ntwo\n{end}\n"
    # a heading section replaced before the marked one never takes a marker with it
    again = replaceHeadingSection(marked, "## Later", "## Later\n\nchanged\n")
    assert again.count(start) == 1 and again.count(end) == 1
    doc = tmp_path / "doc.md"
    rewriteDocument(str(doc), lambda old: old + "appended\n", "# New\n")
    rewriteDocument(str(doc), lambda old: old.replace("appended", "changed"))
    assert doc.read_text() == "# New\nchanged\n" and os.listdir(tmp_path) == ["doc.md"]


def test_a_result_block_is_appended_with_its_command_and_machine(tmp_path) -> None:
    path = tmp_path / "benchmarks.md"
    appendReport("Speed", "python -m benchmarks.env_speed", "how", "| a |", packages=("numpy",), path=str(path),
                 target="bench")
    appendReport("Speed", "python -m benchmarks.env_speed --seconds 1", "how", "| b |", packages=(), path=str(path))
    text = path.read_text()
    assert text.startswith("# srl-toolbox benchmarks\n\n## Speed (") and text.count("## Speed (") == 2
    assert "- Command: `python -m benchmarks.env_speed` (also run by `make bench`)\n" in text and "numpy " in text
    # other options than the make target's: other figures, so no "also run by"
    assert "- Command: `python -m benchmarks.env_speed --seconds 1`\n" in text
    assert text.index("| a |") < text.index("| b |") and os.listdir(tmp_path) == ["benchmarks.md"]


def test_appending_says_where_it_wrote(tmp_path, monkeypatch, capsys) -> None:
    """The shared helper says where the block went, so that every appending benchmark prints the same line."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    appendReport("Speed", "python -m benchmarks.env_speed", "how", "| a |", packages=(), path=str(tmp_path / "out" /
                 "results.md"))
    assert capsys.readouterr().out == f"appended to {os.path.join('out', 'results.md')}\n"
    elsewhere = tmp_path.parent / f"{tmp_path.name}-results.md"  # outside the working folder: absolute
    appendReport("Speed", "python -m benchmarks.env_speed", "how", "| a |", packages=(), path=str(elsewhere))
    assert capsys.readouterr().out == f"appended to {elsewhere}\n"  # (it read ../<name>-results.md)


def test_the_make_target_is_named_only_for_its_own_command() -> None:
    """A block says a make target also runs its command only when the Makefile's recipe is that very command."""
    assert makeNote("bench-srl-rl", "python -m benchmarks.srl_rl --compare-to benchmarks/srl_rl_runs.json") == (
        " (also run by `make bench-srl-rl`)")
    assert makeNote("bench-srl-rl", "python -m benchmarks.srl_rl --doc x.md --report-only --no-append") == ""
    assert makeNote("bench", "python -m benchmarks.srl_speed") == " (also run by `make bench`)"
    assert makeNote("bench", "python -m benchmarks.srl_speed --steps 256") == ""
    assert makeNote("no-such-target", "python -m benchmarks.srl_speed") == ""


def test_the_recorded_command_is_the_module_and_its_arguments(monkeypatch) -> None:
    assert recordedCommand("benchmarks.srl_speed", ["--steps", "64"]) == "python -m benchmarks.srl_speed --steps 64"
    monkeypatch.setattr("sys.argv", ["srl_speed.py", "--no-append"])
    assert recordedCommand("benchmarks.srl_speed", None) == "python -m benchmarks.srl_speed --no-append"


def test_the_documented_commands_are_the_module_form_of_existing_commands() -> None:
    """A results block's ``- Command:`` runs as written: ``python -m benchmarks.X`` (``python benchmarks/X.py`` fails:
    no module named 'benchmarks'), X a module or package of the benchmarks."""
    with open(BENCH_FILE, encoding="utf-8") as stream:
        commands = [line for line in stream if line.startswith("- Command: `python")]
    assert len(commands) > 20
    for line in commands:
        module = re.match(r"- Command: `python -m benchmarks\.([a-z_]+)[ `]", line)
        assert module, line
        assert importlib.util.find_spec(f"benchmarks.{module.group(1)}") is not None, line


@pytest.mark.parametrize("container", ["benchmarks", "benchmarks.srl_rl"])
def test_every_module_is_in_a_layer_of_its_package(container) -> None:
    """A module in no layer of .importlinter's contract may import any other: the contract checks nothing of it."""
    config = configparser.ConfigParser()
    config.read(os.path.join(REPO, ".importlinter"), encoding="utf-8")
    [contract] = [section for section in config.values() if section.get("containers", "").split() == [container]]
    layered = {name.strip() for line in contract["layers"].split("\n") for name in line.split("|") if name.strip()}
    folder = os.path.join(REPO, *container.split("."))
    modules = {name.removesuffix(".py") for name in os.listdir(folder)
               if (name.endswith(".py") and name != "__init__.py")
               or os.path.isfile(os.path.join(folder, name, "__init__.py"))}
    assert not modules - layered, sorted(modules - layered)


def test_the_architecture_diagram_names_every_layered_module() -> None:
    """docs/architecture.md's diagram of the benchmarks' layers names the modules of .importlinter's contract."""
    config = configparser.ConfigParser()
    config.read(os.path.join(REPO, ".importlinter"), encoding="utf-8")
    [contract] = [section for section in config.values() if section.get("containers", "").split() == ["benchmarks"]]
    layered = {name.strip() for line in contract["layers"].split("\n") for name in line.split("|") if name.strip()}
    with open(os.path.join(REPO, "docs", "architecture.md"), encoding="utf-8") as stream:
        text = stream.read()
    diagram = text[text.index("```", text.index("**The benchmarks.**")):]
    diagram = diagram[3:diagram.index("```", 3)]
    named = {name.strip().rstrip("/") for line in diagram.split("\n")
             for name in re.split(r"\s{2,}", line)[0].split(",") if name.strip()}
    assert named == layered, (sorted(layered - named), sorted(named - layered))


def test_the_countdown_weighs_the_time_left_by_the_work_left() -> None:
    """A benchmark's progress line: the count, and the time so far per unit of work done times the work left."""
    from benchmarks.progress import Countdown
    now = [0.0]
    countdown = Countdown(3, work=30, clock=lambda: now[0])
    now[0] = 60.0
    assert countdown.tick(10) == "[1/3, about 2 min left]"  # 6 s a unit, 20 units left
    now[0] = 75.0
    assert countdown.tick(5) == "[2/3, about 1 min left]"  # 5 s a unit, 15 units left
    now[0] = 200.0
    assert countdown.tick(15) == "[3/3, about 0 min left]"
    assert Countdown(2).tick() == "[1/2, about 0 min left]"
