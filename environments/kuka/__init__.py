"""The Kuka arm envs in PyBullet (a button, two buttons, a random and a moving button), their lowpoly meshes and
the background drawn once per camera."""
