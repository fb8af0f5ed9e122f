"""The mobile robot envs in PyBullet (a target, a 1D track, two targets, a line target) and the sprites renderer
that composites their top-down frames with numpy."""
