"""The benchmarks: measurements of the toolbox written into the docs (``python -m benchmarks.<name>``, ``make bench*``).

The package sits on top of the others (it imports replay, rl_baselines, srl_models, environments and srl_toolbox,
never the reverse) and is not installed: its commands run from the repository root. Invariants, checked by
``.importlinter`` and the tests: the scripts share one run archive (:mod:`benchmarks.archive`) and one doc writer
(:mod:`benchmarks.documents`), below every benchmark; a benchmark writes its figures into the docs only through the
latter, and its reusable results only through the former.
"""

# its commands' modules import their libraries first: srl_toolbox, imported here, installs the one-line Ctrl-C of a
# command's start-up before them (srl_toolbox's docstring)
import srl_toolbox  # noqa: F401
