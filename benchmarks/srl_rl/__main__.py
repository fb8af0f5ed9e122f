"""``python -m benchmarks.srl_rl``: the SRL + RL benchmark (benchmarks.srl_rl.cli)."""
from benchmarks.srl_rl.cli import main
from srl_toolbox.cli import runCommand

runCommand(main)
