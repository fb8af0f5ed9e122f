"""The omnidirectional robot env, simulated and drawn with OpenCV."""
