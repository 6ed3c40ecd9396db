"""The package's version, in one place: setup.py reads it and ``--version`` prints it."""
__version__ = "0.1.0"
