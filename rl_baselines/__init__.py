"""RL algorithms behind one interface (BaseRLObject), the train/pipeline/search commands and their run folders.

``__version__`` is the distribution's, defined once in srl_toolbox.
"""
from srl_toolbox import __version__

__all__ = ["__version__"]
