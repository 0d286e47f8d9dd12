"""``kmc matrix``, one module an idea: the command (``command``: its options, its output and exit
codes), the cells (``cells``), running the searches (``run``: rows, bound sets, the options record
and the workers), the expectation file (``compare``) and the output formats (``render``). Progress
lines are ``kmc.progress``."""
