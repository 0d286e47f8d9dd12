"""Which rows of the Kafka model's rule table an action follows (``ModelInfo.action_rules``: the
explorer's list of enabled actions shows them).

Each family declares, with each action, the ids of the rules it follows (``spec.kafka.declared``:
``rules`` on every controller, ``kraft_rules`` on the KRaft rows only;
``spec.kafka.rules.RULE_IDS``): ``ACTION_RULES`` reads them. A row whose flag the protocol lacks is
still shown, marked off: it says what a later (or earlier) release does differently.

The rule table's ``model`` column names, for every rule, the model functions that implement it
(``actions_data._receive_fetch_state, _serve_fetch_state; log.diverging_epoch``; ``row_functions``
reads it), and a declaration names the functions that compute its action (``ACTION_FUNCTIONS``):
``tests/test_kafka_declared.py`` checks that an action's rules are those whose functions it names,
so the two stay one account.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from spec.kafka.declared import action_functions, action_rules
from spec.kafka.families import ACTIONS
from spec.kafka.rules import RULE_IDS

#: action name -> the model functions (as the rule table's ``model`` column names them) that compute
#: it: each family's declaration of its actions (``spec.kafka.declared``,
#: ``spec.kafka.families.ACTIONS``)
ACTION_FUNCTIONS: Mapping[str, tuple[str, ...]] = action_functions(ACTIONS)

#: action name -> the ids of the rules it follows on a ZooKeeper row (False) and on a KRaft row
#: (True), from the declarations
ACTION_RULES: Mapping[bool, Mapping[str, tuple[str, ...]]] = {kraft: action_rules(ACTIONS, kraft)
                                                              for kraft in (False, True)}
_CALLED = re.compile(r"\(([^)]*)\)")
_ACTION_WORD = re.compile(r"\b[A-Z][a-z]+(?:[A-Z][a-z]+)+\b")
_FUNCTION = re.compile(r"[A-Za-z_][\w.]*")


def row_functions(model_text: str) -> list[tuple[str, frozenset[str]]]:
    """``(function, actions)`` for each function a row's ``model`` text names, qualified by its
    module (``actions_data._error, _receive_fetch_state; actions_control._restarts_truncation``: the
    module of a function carries over a comma, not a semicolon); ``actions`` is the set of action
    names a parenthesis after it restricts it to (empty: every action the function computes)."""
    out = []
    # commas inside a parenthesis belong to it: cut the text at the commas and semicolons outside
    # one
    depth, start, pieces = 0, 0, []
    for pos, ch in enumerate(model_text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(depth - 1, 0)
        elif ch in ",;" and depth == 0:
            pieces.append((model_text[start:pos], ch))
            start = pos + 1
    pieces.append((model_text[start:], ";"))
    module = ""
    for piece, ends in pieces:
        piece = piece.strip()
        head = _FUNCTION.match(piece)
        if head is not None:
            function = head.group(0)
            if "." in function:
                module = function.rsplit(".", 1)[0]
            elif module:
                function = f"{module}.{function}"
            notes = " ".join(_CALLED.findall(piece))
            named = frozenset(w for w in _ACTION_WORD.findall(notes) if w in ACTION_FUNCTIONS)
            out.append((function, named))
        if ends == ";":
            module = ""
    return out


def rules_for_action(action_name: str, rows: Sequence[Mapping[str, str]],
                     kraft: bool = False) -> list[Mapping[str, str]]:
    """The rows of a rule table (``ModelInfo.rules(protocol)``) that the action follows, in table
    order: those its declaration names (with ``kraft``, a KRaft row, its ``kraft_rules`` too)."""
    names = {RULE_IDS[rule].name for rule in ACTION_RULES[kraft].get(action_name, ())}
    return [row for row in rows if row.get("rule") in names]
