"""The imports inside functions are of the optional or slow dependencies docs/architecture.md lists, each in a module
that list names, never of a project module (which would dodge an import cycle or a layer)."""
from __future__ import annotations

import ast
import os
import re

from conftest import REPO

PACKAGES = ("benchmarks", "srl_toolbox", "environments", "srl_models", "rl_baselines", "replay")
# each with the words docs/architecture.md names it by
DEFERRED = {"optuna": "optuna", "sqlalchemy": "sqlalchemy", "ray": "Ray", "grpc": "grpc", "torch": "tensorboard",
            "visdom": "visdom", "tornado": "tornado", "cma": "cma", "matplotlib": "matplotlib",
            "fast_simplification": "fast_simplification"}


def _deferredImports() -> dict[str, list[str]]:
    """:return: the top-level name of each module imported inside a function, with where"""
    found: dict[str, list[str]] = {}
    for package in PACKAGES:
        for folder, _, files in os.walk(os.path.join(REPO, package)):
            for name in files:
                if not name.endswith(".py"):
                    continue
                path = os.path.join(folder, name)
                tree = ast.parse(open(path, encoding="utf-8").read())
                for function in ast.walk(tree):
                    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        continue
                    for node in ast.walk(function):
                        if isinstance(node, ast.ImportFrom) and node.level == 0:
                            modules = [node.module]
                        elif isinstance(node, ast.Import):
                            modules = [alias.name for alias in node.names]
                        else:
                            modules = ["(relative)"] if isinstance(node, ast.ImportFrom) else []
                        for module in modules:
                            where = f"{os.path.relpath(path, REPO)}:{node.lineno}"
                            found.setdefault(module.split(".")[0], []).append(where)
    return found


def test_only_the_documented_dependencies_are_imported_inside_functions() -> None:
    found = _deferredImports()
    assert not set(found) - set(DEFERRED), {name: found[name] for name in set(found) - set(DEFERRED)}
    text = " ".join(open(os.path.join(REPO, "docs", "architecture.md"), encoding="utf-8").read().split())
    start = text.index("the only imports inside functions are")
    listed = text[start:text.index("`make lint`", start)]
    assert [DEFERRED[name] for name in found if DEFERRED[name] not in listed] == []
    # and each module that imports one is named there (its path, or its path within its package)
    named = set(re.findall(r"`([^`]+)`", listed))
    unnamed = {where for places in found.values() for where in places
               if not {where.split(":")[0], where.split(":")[0].split("/", 1)[-1]} & named}
    assert not unnamed, sorted(unnamed)
