"""docs/architecture.md's package diagram against the code: the line for srl_toolbox/, the package every other one
uses, names each of its modules."""
from __future__ import annotations

import os

from conftest import REPO


def test_the_package_diagram_names_every_module_of_srl_toolbox() -> None:
    text = open(os.path.join(REPO, "docs", "architecture.md"), encoding="utf-8").read()
    start = text.index("\nsrl_toolbox/ ")
    described = " ".join(text[start:text.index("```", start)].split())
    modules = {name.removesuffix(".py") for name in os.listdir(os.path.join(REPO, "srl_toolbox"))
               if name.endswith(".py") and name != "__init__.py"}
    assert not {name for name in modules if f"({name}" not in described}, described
