"""The shared plugin loader (srl_toolbox.plugins) on mistakes a plugin author makes: a module that exits or fails an
assert when imported, and entry points declared under a misspelt group. Each is one skipped plugin with its reason,
never a command that ends or crashes. The loader runs in a fresh process with a plugin site (a real dist-info) on its
PYTHONPATH, on a group of the test's own where the toolbox's plugins are not needed."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import REPO

LOAD_SCRIPT = ("import json, sys, warnings\n"
               "from srl_toolbox import plugins\n"
               "if sys.argv[2:]:\n"
               "    plugins.TOOLBOX_GROUPS = tuple(sys.argv[2:])\n"
               "with warnings.catch_warnings(record=True) as caught:\n"
               "    warnings.simplefilter('always')\n"
               "    loaded, failures = plugins.loadPlugins(sys.argv[1], lambda plugin: None, 'algorithm')\n"
               "print(json.dumps({'loaded': sorted(loaded), 'failures': failures,\n"
               "                  'warnings': [str(w.message) for w in caught]}))\n")


def _site(root, modules: dict[str, str], entry_points: str) -> dict[str, str]:
    """:return: the environment of a process with the package ``qa_load`` (``modules``: name -> code) and a
    distribution declaring ``entry_points`` (an entry_points.txt) on its path"""
    package = root / "qa_load"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for name, code in modules.items():
        (package / f"{name}.py").write_text(code)
    dist_info = root / "qa_load-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: qa-load\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text(entry_points)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([REPO, str(root)]), "SRL_TOOLBOX_WARNED_PLUGIN_GROUPS": ""}


def _load(env: dict[str, str], group: str, *toolbox_groups: str, printed: list[str] | None = None) -> dict:
    """:return: what the loader loaded and skipped (the process's last line); ``printed`` gets the lines before it
    and its stderr"""
    result = subprocess.run([sys.executable, "-c", LOAD_SCRIPT, group, *toolbox_groups], capture_output=True,
                            text=True, env=env, cwd=REPO, timeout=300)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    lines = result.stdout.splitlines()
    if printed is not None:
        printed += [*lines[:-1], *result.stderr.splitlines()]
    return json.loads(lines[-1])


def test_a_plugin_that_exits_or_fails_an_assert_when_imported_is_skipped(tmp_path) -> None:
    env = _site(tmp_path, {"good": "class Good:\n    pass\n",
                           "exits": "import argparse\nargparse.ArgumentParser().parse_args(['--nope'])\n",
                           "quits": "import sys\nsys.exit('bye from quits')\n",
                           "asserts": "assert 1 == 2, 'module assert'\n",
                           "talks": "print('hello from talks')\nclass Talks:\n    pass\n"},
                "[qa_load.things]\ngood = qa_load.good:Good\nexits = qa_load.exits:X\nquits = qa_load.quits:X\n"
                "asserts = qa_load.asserts:X\ntalks = qa_load.talks:Talks\n")
    # SystemExit (parse_args or sys.exit at import) went through the loader and ended every command; an
    # AssertionError was re-raised by it and crashed them
    printed: list[str] = []
    data = _load(env, "qa_load.things", printed=printed)
    # what a skipped plugin's import printed (argparse's usage and error, as if the command refused its own
    # arguments) is dropped; a plugin that loads keeps its output
    assert printed == ["hello from talks"], printed
    assert data["loaded"] == ["good", "talks"]
    assert data["failures"] == {
        "exits": "qa_load.exits:X: SystemExit: 2 (the module exits when imported: sys.exit or parse_args()?)",
        "quits": "qa_load.quits:X: SystemExit: bye from quits (the module exits when imported: sys.exit or "
                 "parse_args()?)",
        "asserts": "qa_load.asserts:X: AssertionError: module assert"}
    assert sorted(w.split("'")[1] for w in data["warnings"]) == ["asserts", "exits", "quits"], data["warnings"]


def test_entry_points_under_a_misspelt_group_are_named_as_skipped(tmp_path) -> None:
    env = _site(tmp_path, {"good": "class Good:\n    pass\n"},
                "[qa_load.things]\ngood = qa_load.good:Good\nboth = qa_load.good:Good\n"
                "[qa_load.thing]\ntypo = qa_load.good:Good\nboth = qa_load.good:Good\n"
                "[Qa-Load.Things]\ncased = qa_load.good:Good\n"
                "[qa_load.others]\nother = qa_load.good:Good\n"
                "[console_scripts]\nscript = qa_load.good:Good\n")
    # a plugin declared under a misspelt group was never loaded, and nothing said so: --algo NAME was unknown
    data = _load(env, "qa_load.things", "qa_load.things", "qa_load.other")
    assert data["loaded"] == ["both", "good"]  # a name also declared under the right group loads from it
    assert data["failures"] == {
        "typo": "qa_load.good:Good: declared under the entry-point group 'qa_load.thing', not 'qa_load.things' "
                "(rename the group and reinstall)",
        "cased": "qa_load.good:Good: declared under the entry-point group 'Qa-Load.Things', not 'qa_load.things' "
                 "(rename the group and reinstall)"}
    assert sorted(w.split("'")[1] for w in data["warnings"]) == ["cased", "typo"], data["warnings"]
    # the toolbox's own groups: a misspelling is attributed to the group it is closest to, and to no other
    env = _site(tmp_path / "real", {"good": "class Good:\n    pass\n"},
                "[srl_toolbox.rl_algorithm]\nmy_algo = qa_load.good:Good\n"
                "[srl_toolbox.srl_model]\nmy_model = qa_load.good:Good\n"
                "[srl_toolbox.environment]\nMyEnv-v0 = qa_load.good:Good\n"
                "[myproject.environments]\nforeign = qa_load.good:Good\n")
    found = json.loads(subprocess.run(
        [sys.executable, "-c", "import json; from srl_toolbox.plugins import TOOLBOX_GROUPS, misnamedEntryPoints as m; "
                               "print(json.dumps({g: sorted(m(g)) for g in TOOLBOX_GROUPS}))"],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=300, check=True).stdout)
    assert found == {"srl_toolbox.rl_algorithms": ["my_algo"], "srl_toolbox.srl_models": ["my_model"],
                     "srl_toolbox.environments": ["MyEnv-v0"], "srl_toolbox.policy_loaders": []}


def test_an_algorithm_or_srl_model_whose_name_cannot_name_a_folder_is_skipped(tmp_path) -> None:
    """An algorithm's and an SRL model's names are run folder levels and model file names: a plugin named
    "slash/algo" wrote its model into a sub-folder (the run then read as unfinished, no model saved), one named ".."
    put its runs a level up, beside the SRL models' folders. Such names are skipped with their reason."""
    ppo2, vae = "rl_baselines.rl_algorithm.ppo2:PPO2Model", "srl_models.models:VAEModel"
    bad = ("slash/algo", "..", "with space", "Tiny", "-dash")
    env = _site(tmp_path, {}, "[srl_toolbox.rl_algorithms]\n" + "".join(f"{name} = {ppo2}\n" for name in bad)
                + f"my-ppo_2 = {ppo2}\n[srl_toolbox.srl_models]\nsl/model = {vae}\nmy_vae = {vae}\n")
    code = ("import json, warnings\n"
            "warnings.simplefilter('ignore')\n"
            "from rl_baselines.core.registry import failed_plugins, registered_rl\n"
            "from srl_models.registry import failedSRLPlugins, registeredSRL\n"
            "print(json.dumps({'rl': sorted(registered_rl), 'rl_failed': failed_plugins,\n"
            "                  'srl': sorted(registeredSRL()), 'srl_failed': failedSRLPlugins()}))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert "my-ppo_2" in data["rl"] and "my_vae" in data["srl"] and "ppo2" in data["rl"]
    for name in bad:
        assert name not in data["rl"]
        assert data["rl_failed"][name] == (f"{ppo2}: the name {name!r} does not fit: algorithm names have lowercase "
                                           "letters, digits, '_' and '-' only, starting with a letter or a digit (they "
                                           "name the run folders and model files)")
    assert "sl/model" not in data["srl"] and "does not fit: SRL model names have" in data["srl_failed"]["sl/model"]
