"""Looking at results: enjoy (replay a trained agent), plots, result tables and the offline visdom server.

``__version__`` is the distribution's, defined once in srl_toolbox. The Python API's names (replay.api) are
importable from the package, ``from replay import gatherResults``; they are loaded on first use
(srl_toolbox.lazy_names), so that importing a submodule (``python -m replay.gather_results``) does not import the API.
"""
from srl_toolbox import __version__
from srl_toolbox.lazy_names import lazyNames

__all__ = ["__version__"]

_API_NAMES = ("ResultsTable", "RunCurve", "UsageError", "gatherResults", "runCurve")

__getattr__, __dir__ = lazyNames(__name__, "replay.api", _API_NAMES, globals())
