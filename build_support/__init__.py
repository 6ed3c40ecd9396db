"""Build steps of setup.py: the panel (npm) and the compiled converter modules (mypyc)."""
