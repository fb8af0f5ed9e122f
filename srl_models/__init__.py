"""State representation learning: encoders behind BaseSRLModel, their training, evaluation and lookup.

``__version__`` is the distribution's, defined once in srl_toolbox.
"""
from srl_toolbox import __version__

__all__ = ["__version__"]
