"""The deprecated re-export shims and the published command modules.

- Every shim emits one ``DeprecationWarning`` when imported, naming the path to import instead and the version that
  removes it (srl_toolbox.deprecation.REMOVAL_VERSION), attributed to the importing line; it still re-exports the very
  objects of the new path.
- The list below is every shim: a module of the project that calls ``warnMovedModule`` is in it, with its own name.
- No module of the project (packages, tests, benchmarks, docs scripts, the bundled cem plugin) imports a shim.
- The command modules (``python -m rl_baselines.train`` and every other module run as a command) import without a
  deprecation warning and without importing a shim, plugins (the cem plugin) included.
"""
from __future__ import annotations

import ast
import functools
import json
import os
import subprocess
import sys

import pytest

from srl_toolbox import __version__
from srl_toolbox.deprecation import REMOVAL_VERSION, movedModuleMessage

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Folders that are not the project's own code
SKIPPED_FOLDERS = {".git", ".venv", "third_party", "build", "logs", "data", "__pycache__", "node_modules"}
# Every deprecated import path -> the modules its names live in now
SHIMS = {
    "rl_baselines.algo_types": ("rl_baselines.core.algo_types",),
    "rl_baselines.base_classes": ("rl_baselines.core.base", "rl_baselines.rl_algorithm.sb3_base"),
    "rl_baselines.cli": ("srl_toolbox.cli",),
    "rl_baselines.devices": ("srl_toolbox.devices",),
    "rl_baselines.files": ("srl_toolbox.files",),
    "rl_baselines.hyperparams": ("rl_baselines.core.hyperparams",),
    "rl_baselines.registry": ("rl_baselines.core.registry",),
    "rl_baselines.resume": ("rl_baselines.runs.resume", "rl_baselines.core.checkpointing"),
    "rl_baselines.run_logging": ("rl_baselines.runs.run_logging",),
    "rl_baselines.run_policy": ("rl_baselines.runs.run_policy",),
    "rl_baselines.srl_encoder": ("rl_baselines.envs.srl_encoder",),
    "rl_baselines.training_state": ("rl_baselines.core.training_state", "rl_baselines.envs.wrappers"),
    "rl_baselines.utils": ("rl_baselines.envs.factory", "rl_baselines.envs.wrappers"),
    "environments.cli_errors": ("srl_toolbox.cli",),
    "environments.files": ("srl_toolbox.files",),
    "environments.locks": ("srl_toolbox.locks",),
    "environments.plugins": ("srl_toolbox.plugins",),
}
# The published command modules: thin or not, they stay and never warn
COMMAND_WRAPPERS = ("rl_baselines.train", "rl_baselines.pipeline", "rl_baselines.hyperparam_search")

# In one fresh interpreter: imports every command module and the three registries (so that plugins load), recording
# every warning and the modules then imported; then imports every shim, each recording its own warnings (nothing
# else imports a shim, as the first part checks, so each import runs the shim's code). Prints what was seen as JSON.
IMPORT_COMMANDS_THEN_SHIMS = """
import importlib, json, sys, warnings
commands, shims = json.loads(sys.argv[1])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for module in commands:
        importlib.import_module(module)
imported = {"warnings": [(w.category.__name__, str(w.message), w.filename) for w in caught],
            "modules": sorted(sys.modules)}
for new_modules in shims.values():
    for module in new_modules:
        importlib.import_module(module)
seen = {}
for old, new_modules in shims.items():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        __import__(old)  # as an import statement does (importlib.import_module would be the importing frame)
    shim = sys.modules[old]
    objects_match = all(any(getattr(shim, name) is getattr(sys.modules[new], name, None) for new in new_modules)
                        for name in shim.__all__ if name != "OneLineParser")
    seen[old] = {"warnings": [(w.category.__name__, str(w.message), w.filename) for w in caught],
                 "objects_match": objects_match, "names": len(shim.__all__)}
print(json.dumps({"commands": imported, "shims": seen}))
"""


@functools.cache
def parsed(path: str) -> ast.Module:
    """:return: the parsed Python file ``path`` (read once for all the tests)"""
    with open(path, encoding="utf-8") as handle:
        return ast.parse(handle.read(), path)


@functools.cache
def projectSources() -> tuple[str, ...]:
    """
    :return: every Python file of the project (packages, tests, benchmarks, docs, plugins), vendored code excluded
    """
    sources = []
    for folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = sorted(name for name in subfolders if name not in SKIPPED_FOLDERS and not name.startswith("."))
        sources += [os.path.join(folder, name) for name in sorted(files) if name.endswith(".py")]
    return tuple(sources)


def moduleName(path: str) -> str | None:
    """
    :param path: a Python file of the project
    :return: its dotted module name when it belongs to one of the importable packages, else None
    """
    relative = os.path.relpath(path, ROOT)
    parts = relative[:-len(".py")].split(os.sep)
    if parts[0] not in ("rl_baselines", "environments", "srl_models", "replay", "srl_toolbox", "benchmarks"):
        return None
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def importedModules(tree: ast.AST) -> set[str]:
    """
    :param tree: a parsed module
    :return: every module it imports, ``from package import module`` counted as ``package.module``, and every string
        handed to ``importlib.import_module``
    """
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imported.add(node.module)
            imported |= {f"{node.module}.{alias.name}" for alias in node.names}
        elif (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))
              and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module" and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            imported.add(node.args[0].value)
    return imported


def shimCalls(tree: ast.AST) -> list[tuple[str, str]]:
    """
    :param tree: a parsed module
    :return: the (old, new) arguments of each ``warnMovedModule`` call at the module's top level
    """
    calls = []
    for node in tree.body:
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name) and node.value.func.id == "warnMovedModule"):
            calls.append(tuple(argument.value for argument in node.value.args))
    return calls


def runPython(script: str, argument: object) -> dict:
    """
    :param script: Python code printing one JSON line last
    :param argument: handed to it as JSON in sys.argv[1]
    :return: the JSON it printed
    """
    result = subprocess.run([sys.executable, "-c", script, json.dumps(argument)], capture_output=True, text=True,
                            cwd=ROOT, timeout=600)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_the_shim_list_is_every_shim() -> None:
    found = {}
    for path in projectSources():
        calls = shimCalls(parsed(path))
        if calls:
            assert len(calls) == 1, f"{path} warns {len(calls)} times"
            found[moduleName(path)] = calls[0]
    assert sorted(found) == sorted(SHIMS)
    for old, (named_old, named_new) in found.items():
        assert named_old == old
        assert named_new == " and ".join(SHIMS[old])


def commandModules() -> list[str]:
    """:return: every module of the project run as a command (``if __name__ == "__main__":``), benchmarks excepted"""
    return sorted(name for path in projectSources()
                  if (name := moduleName(path)) and not name.startswith("benchmarks")
                  and 'if __name__ == "__main__":' in open(path, encoding="utf-8").read())


@pytest.fixture(scope="module")
def freshImports() -> dict:
    """What one fresh interpreter saw importing the command modules and the registries, then every shim
    (IMPORT_COMMANDS_THEN_SHIMS)."""
    commands = commandModules() + ["rl_baselines.core.registry", "srl_models.registry", "environments"]
    return runPython(IMPORT_COMMANDS_THEN_SHIMS, [commands, SHIMS])


def test_every_shim_warns_naming_the_new_path_and_the_removal_version(freshImports) -> None:
    seen = freshImports["shims"]
    assert sorted(seen) == sorted(SHIMS)
    for old, record in seen.items():
        deprecations = [warning for warning in record["warnings"] if warning[0] == "DeprecationWarning"]
        assert len(deprecations) == 1, (old, record["warnings"])
        category, message, filename = deprecations[0]
        assert message == movedModuleMessage(old, " and ".join(SHIMS[old]))
        assert f"removed in srl-toolbox {REMOVAL_VERSION}" in message
        assert all(new in message for new in SHIMS[old])
        # attributed to the importing line, not to the shim or the helper
        assert filename == "<string>", (old, filename)
        assert record["objects_match"] and record["names"] > 0, old


def test_removal_version_comes_after_the_current_version() -> None:
    def release(version: str) -> tuple[int, ...]:
        return tuple(int(part) for part in version.split(".")[:3])

    assert release(REMOVAL_VERSION) > release(__version__)


def test_no_module_of_the_project_imports_a_shim() -> None:
    offenders = []
    for path in projectSources():
        if moduleName(path) in SHIMS or os.path.abspath(path) == os.path.abspath(__file__):
            continue
        imported = importedModules(parsed(path))
        offenders += [f"{os.path.relpath(path, ROOT)}: {module}" for module in sorted(imported & set(SHIMS))]
    assert not offenders, "\n".join(offenders)
    assert any("srl-toolbox-cem" in path for path in projectSources())  # the bundled plugin was scanned


def test_command_modules_import_silently(freshImports) -> None:
    commands = commandModules()
    assert set(COMMAND_WRAPPERS) <= set(commands) and "replay.enjoy_baselines" in commands
    # the registries load every plugin (the bundled cem plugin included)
    seen = freshImports["commands"]
    ours = [warning for warning in seen["warnings"]
            if "srl-toolbox" in warning[1] or (warning[0] == "DeprecationWarning" and warning[2].startswith(ROOT))]
    assert not ours, ours
    assert not set(SHIMS) & set(seen["modules"]), set(SHIMS) & set(seen["modules"])
    assert "srl_toolbox_cem.cem" in seen["modules"]
