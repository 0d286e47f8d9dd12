"""Dead-message reduction: ``--reduce dead``.

A message in flight is *dead* when its delivery, in every continuation, changes nothing but the
network. The model says which messages are dead (``Model.dead_messages()``: an object with
``reduce(state)``, the state without them, ``dead(state, message)`` and ``deliveries(state)``, the
model's own steps that deliver them; the Kafka model's is ``spec.kafka.dead``, with the argument per
message kind and release). The search stores each state without its dead messages
(``checker.search.search_canonical``, before the symmetry's canonical form): a classic dead-variable
reduction. Every stored state is then a reachable state of the unreduced model (its dead messages
delivered), and every reachable state's reduced form is stored, with every invariant's verdict,
provided the model's declaration holds: a dead message's presence only disables other steps, it
stays dead, and an invariant violated with it is violated without it (``spec.kafka.dead`` argues
each for the Kafka model; ``tests/test_dead.py`` checks them).

Counterexamples are replayed on the unreduced model (``checker.search.rebuild_trace``): the recorded
steps, with the dead messages of the state reached delivered first wherever the recorded step is not
a step of that state (the search took it in the stored state, without them: the follower's next
request, which waits for the answer it is owed), and the delivery of every dead message still in
flight at the end, so the trace ends in the stored violating state and every step is a step of the
model. It is a real behaviour but not necessarily a shortest one (the reduced search's depth does
not count the deliveries it folded away, and the replay adds those still in flight); ``--shortest``
then runs the full search bounded at its length (``checker.reductions.shortest_rerun``).

Engines: the local breadth-first engine, the parallel one (``--workers N``: each worker applies the
same form) and Spark (both transports: its executors expand in the same form; its run directories,
``--checkpoint DIR`` and ``--resume DIR``, name the reduction in their identity). Refused with one
line (exit 64): the other engines, liveness properties, and the checkpoints of the local and
parallel engines (``check_supported``).
"""

from __future__ import annotations

from typing import Any

from checker.search import SearchOptions
from spec.errors import UsageError
from spec.model import Model


def check_supported(options: SearchOptions) -> None:
    """One line (exit 64) where ``--reduce dead`` cannot run (the engines that run it, and those
    whose checkpoints keep it, say so in their record: ``checker.engines.Engine.reductions`` and
    ``reduced_checkpoints``)."""
    if options.liveness_properties() or options.keep_graph:
        raise UsageError("--reduce dead preserves safety properties only; check liveness "
                         "properties without it")


def report(model: Model) -> dict[str, Any]:
    """What ``--reduce dead`` dropped on this model (the kinds of dead message it declares)."""
    reducer = model.dead_messages()
    return {"method": "dead", "dead_messages": reducer.describe() if reducer is not None else []}
