"""srl-toolbox: the distribution's version, defined once here.

setup.py reads ``__version__`` from this file (without importing it), and rl_baselines, srl_models, environments
and replay re-export it, so ``python -m rl_baselines.train --version`` and ``pip show srl-toolbox`` always agree.
This package sits below every other one and imports nothing.
"""

__version__ = "0.2.0.dev0"
