"""State representation learning: encoders behind BaseSRLModel, their training, evaluation and lookup.

``__version__`` is the distribution's, defined once in srl_toolbox. The Python API's names (srl_models.api) are
importable from the package, ``from srl_models import trainSRLModel``; they are loaded on first use
(srl_toolbox.lazy_names), so that importing a submodule (``python -m srl_models.train``) does not import the API.
"""
from srl_toolbox import __version__
from srl_toolbox.lazy_names import lazyNames

__all__ = ["__version__"]

_API_NAMES = ("SRLScores", "UsageError", "evaluateSRLModel", "loadSRLModel", "prepareSRLModels", "recordDataset",
              "trainSRLModel")

__getattr__, __dir__ = lazyNames(__name__, "srl_models.api", _API_NAMES, globals())
