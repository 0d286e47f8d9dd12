"""kmc's engines: how a model's state space is searched (the level loop, the local, parallel, Spark
and directed engines), the visited set, checkpoints and the result types. The command line is the
``kmc`` package above."""
