"""Which story a counterexample is an instance of: the fix that removes it.

A violated cell of ``kmc matrix`` names the KIP or JIRA its counterexample is an instance of. That
is computed, not looked up: the counterexample's actions are replayed under the same row with one
fix switched on (a feature flag that a later protocol version of the model has and this one lacks),
and the first fix, oldest first, under which the trace is no longer a counterexample (the invariant
holds at every step, or a step is no longer enabled) and no counterexample as short remains at the
same bounds is the story. The model's rule table (``ModelInfo.rules``) gives the fix's ticket and
rule. When no single fix removes it, the first later version whose whole set of changes does is
named, with the tickets it added. A trace that no later fix removes is reported as such ("no later
release's fix removes it"), or by the switches that allow it (a flag on here that no protocol
version has by default, such as unclean election), so a cell never claims a story that its trace
does not exhibit.

Generic over models with protocol versions and feature flags; nothing here knows Kafka.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from spec.errors import UsageError
from spec.registry import build_model, get_model_info


@dataclass(frozen=True)
class Story:
    flag: str | None  # the fix that removes the counterexample, or None
    ticket: str
    text: str  # one line: "KAFKA-7786: an OffsetsForLeaderEpoch answer is ignored if ..."

    def to_json(self) -> dict[str, Any]:
        return {"flag": self.flag, "ticket": self.ticket, "text": self.text}


def _line(protocol: str) -> str:
    """The line a protocol version belongs to: the prefix of a name ``LINE-VERSION``
    (``kraft-3.5``), or the default line for a plain version (``2.8.0``)."""
    return protocol.rsplit("-", 1)[0] if "-" in protocol else ""


def _features_of(model_name: str, protocol: str, flags: Sequence[str],
                 constants: Sequence[str]) -> dict[str, bool]:
    return dict(_features(model_name, protocol, tuple(flags), tuple(constants)))


@lru_cache(maxsize=512)
def _features(model_name: str, protocol: str, flags: tuple[str, ...],
              constants: tuple[str, ...]) -> tuple:
    """The resolved flags of a configuration (a matrix asks the same ones for every violated
    cell)."""
    return tuple((build_model(model_name, list(constants), protocol,
                              list(flags)).describe().get("features") or {}).items())


#: the most distinct states a confirming search explores (see ``_removed``); beyond it the fix is
#: not credited
CONFIRM_MAX_STATES = 1_000_000


def _replay(model: Any, trace: Any, invariant: Any) -> str:
    """Replay ``trace``'s actions on ``model`` from its first initial state (a fix may change the
    initial state itself, e.g. an epoch registered at start): "violated" if every step up to a state
    that breaks the invariant is enabled, "blocked" if a step is not enabled, "holds" if every step
    is and the invariant holds throughout."""
    init = model.init_states()
    if not init:
        return "blocked"
    state = init[0]
    if not invariant.holds(state):
        return "violated"
    for step in trace.steps:
        wanted = step.action
        for action, successor in model.successors(state):
            if action == wanted:
                state = successor
                break
        else:
            return "blocked"
        if not invariant.holds(state):
            return "violated"
    return "holds"


def _still_violates(model: Any, trace: Any, invariant: Any) -> bool:
    """True if ``trace`` replays on ``model`` to a state that breaks ``invariant``."""
    return _replay(model, trace, invariant) == "violated"


def _removed(model: Any, trace: Any, invariant: Any, kernel: str = "auto") -> bool:
    """Whether ``model`` (a fix switched on) removes the counterexample. The trace must no longer
    break the invariant (a step is no longer enabled, or every state satisfies it), and that is not
    enough: a fix may only renumber or reshape what the trace names (KAFKA-15021 keeps the leader
    epoch on an ISR shrink, so kraft-3.5's 11-step loss replays to states that satisfy the invariant
    while the same loss, with other epochs, is still there in 11 steps). So the model is also
    searched to the trace's length: the fix is credited only if no counterexample of that length or
    shorter remains (a longer one is another story: 2.8.0's KAFKA-13207 loss outlives KAFKA-13141's
    fix, which removes the shorter KAFKA-13141 trace). A search that reaches ``CONFIRM_MAX_STATES``
    first credits nothing. The search runs on the model's compiled kernel where it is proven for the
    switched flags (``kernel="auto"``: the same states, depth and verdict), else on the readable
    model; ``kernel="off"`` (``kmc matrix --kernel off``) always on the readable model."""
    if _replay(model, trace, invariant) == "violated":
        return False
    from checker.engines import run
    from checker.search import SearchOptions

    # a depth bound counts states, the initial one included: a counterexample of L steps ends at
    # depth L + 1
    result = run(model, SearchOptions(invariants=[invariant], max_depth=len(trace.steps) + 1,
                                      max_states=CONFIRM_MAX_STATES, kernel=kernel))
    if result.violations:
        return False
    return result.reason is None or result.reason.startswith("depth bound")


def story_of(model_name: str, protocol: str, flags: Sequence[str], constants: Sequence[str],
             invariant: Any, trace: Any, kernel: str = "auto") -> Story | None:
    """The story of a counterexample of ``invariant`` found under ``protocol`` with ``flags``
    (NAME=on|off); ``kernel``: the confirming searches' path (``_removed``)."""
    info = get_model_info(model_name)
    if info.rules is None or not info.protocols:
        return None
    # the table under this protocol: a fix's row names the release that brings it to this protocol's
    # line (``fixed_in``), where the model knows one, else the release that introduced it
    rows = {row["flag"]: row for row in info.rules(protocol) if row.get("flag") and row["flag"]
            != "(every release)"}
    here = _features_of(model_name, protocol, flags, constants)
    names = list(info.protocols)
    target = info.protocol_aliases.get(protocol, protocol)
    later = names[names.index(target) + 1 :] if target in names else names
    # versions of another line (a protocol named LINE-VERSION, e.g. another controller) are not this
    # one's successors
    later = [name for name in later if _line(name) == _line(target)]
    candidates: list[str] = []
    for later_protocol in later:
        for flag, on in _features_of(model_name, later_protocol, [], constants).items():
            if on and not here.get(flag, False) and flag not in candidates and flag in rows:
                candidates.append(flag)
    for flag in candidates:
        try:
            fixed = build_model(model_name, list(constants), protocol, list(flags) + [f"{flag}=on"])
        except UsageError:  # a flag that does not exist with this row's mechanisms is no candidate
            continue
        if _removed(fixed, trace, invariant, kernel):
            row = rows[flag]
            return Story(flag, row["ticket"],
                         f"{row['ticket']}: {row['rule']} (fixed in "
                         f"{row.get('fixed_in') or row['release']})")
    # no single fix removes it: the first later version whose whole set of changes does (several
    # fixes together)
    for later_protocol in later:
        try:
            fixed = build_model(model_name, list(constants), later_protocol, list(flags))
        except UsageError:
            continue
        if _removed(fixed, trace, invariant, kernel):
            added = [f for f, on in _features_of(model_name, later_protocol, [], constants).items()
                     if on and not here.get(f, False) and f in rows]
            needed = _minimal_fixes(model_name, protocol, flags, constants, invariant, trace, added,
                                    kernel)
            tickets = ", ".join(dict.fromkeys(rows[f]["ticket"] for f in needed)) or "its changes"
            return Story(None, tickets, f"{tickets} together (fixed in {later_protocol}; no one of "
                         "them alone removes it)")
    defaults = [_features_of(model_name, p, [], constants) for p in names]
    configured = [flag for flag, on in here.items() if on
                  and not any(d.get(flag) for d in defaults)]
    if configured:
        return Story(None, "configuration", f"allowed by {', '.join(configured)}=on: no release's "
                     "fix removes it")
    return Story(None, "open", "no later release's fix removes this counterexample")


def _minimal_fixes(model_name: str, protocol: str, flags: Sequence[str], constants: Sequence[str],
                   invariant: Any, trace: Any, added: list[str], kernel: str = "auto"
                   ) -> list[str]:
    """A smallest-by-removal subset of ``added`` that, switched on together in ``protocol``, still
    removes the counterexample (each flag dropped in turn if the rest still remove it); ``added`` if
    none combines."""
    def removes(subset: list[str]) -> bool:
        try:
            model = build_model(model_name, list(constants), protocol, list(flags)
                                + [f"{f}=on" for f in subset])
        except UsageError:
            return False
        return _removed(model, trace, invariant, kernel)

    if not removes(added):
        return added
    needed = list(added)
    for flag in list(added):
        trial = [f for f in needed if f != flag]
        if trial and removes(trial):
            needed = trial
    return needed
