"""srl-toolbox-cem: an srl-toolbox plugin package, installed on its own, that adds the `cem` RL algorithm and the
`downsample` SRL model through entry points (see README.md)."""

__version__ = "0.1.0"
