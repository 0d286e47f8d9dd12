"""``python -m kmc``: the same command line as ``kmc``."""

from kmc.cli import entry

if __name__ == "__main__":
    entry()
