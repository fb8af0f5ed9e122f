"""Looking at results: enjoy (replay a trained agent), plots, result tables and the offline visdom server.

``__version__`` is the distribution's, defined once in srl_toolbox.
"""
from srl_toolbox import __version__

__all__ = ["__version__"]
