"""``python -m checker``: the same command line as ``kmc``."""

from checker.cli import entry

if __name__ == "__main__":
    entry()
