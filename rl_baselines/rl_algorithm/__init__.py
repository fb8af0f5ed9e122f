"""The algorithms, one module each: the SB3 and sb3-contrib ones through the SB3 adapter (sb3_base), those written
here on torch (torch_base), and the random agent; setup.py declares each under its name as an entry point, as a
plugin is declared."""
