"""Which rows of the Kafka model's rule table an action follows (``ModelInfo.action_rules``: the explorer's list of
enabled actions shows them).

The rule table (``kmc list --rules``, ``spec.kafka.rules``) names, for every rule, the model functions that
implement it (its ``model`` column: ``actions_data._receive_fetch_state, _serve_fetch_state;
log.diverging_epoch``). ``ACTION_FUNCTIONS`` says which of those functions compute each action of the Kafka
model (each family declares them with its actions: ``spec.kafka.declared``), so an action's
rules are the rows that name one of its functions. A function named with a parenthesis that names actions
(``actions_control._controller_actions (UncleanLeaderElection)``) applies to those actions only. A row whose
flag the protocol lacks is still shown, marked off: it says what a later (or earlier) release does differently.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from spec.kafka.declared import action_functions
from spec.kafka.model import ACTIONS

#: action name -> the model functions (as the rule table's ``model`` column names them) that compute it: each family's
#: declaration of its actions (``spec.kafka.declared``, ``spec.kafka.model.ACTIONS``)
ACTION_FUNCTIONS: Mapping[str, tuple[str, ...]] = action_functions(ACTIONS)

#: the modules of the KRaft rows' families (the AlterIsr of the ZooKeeper rows with ``alter-isr`` among them, as before
#: the KRaft family was split)
_KRAFT_FAMILIES = ("actions_kraft", "actions_alter_partition", "actions_alter_isr", "actions_broker_lifecycle",
                   "actions_reassignment")
_CALLED = re.compile(r"\(([^)]*)\)")
_ACTION_WORD = re.compile(r"\b[A-Z][a-z]+(?:[A-Z][a-z]+)+\b")
_FUNCTION = re.compile(r"[A-Za-z_][\w.]*")


def row_functions(model_text: str) -> list[tuple[str, frozenset[str]]]:
    """``(function, actions)`` for each function a row's ``model`` text names, qualified by its module
    (``actions_data._error, _receive_fetch_state; actions_control._restarts_truncation``: the module of a
    function carries over a comma, not a semicolon); ``actions`` is the set of action names a parenthesis after
    it restricts it to (empty: every action the function computes)."""
    out = []
    # commas inside a parenthesis belong to it: cut the text at the commas and semicolons outside one
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


def _names(function: str) -> set[str]:
    """The names a function is known by: ``actions_data._receive_fetch_state`` is also ``_receive_fetch_state``;
    a module path (``spec.kafka.log``) stays whole."""
    if "." in function and not function.startswith("spec."):
        return {function, function.rsplit(".", 1)[1]}
    return {function}


def rules_for_action(action_name: str, rows: Sequence[Mapping[str, str]], kraft: bool = False) -> list[Mapping[str, str]]:
    """The rows of a rule table (``ModelInfo.rules(protocol)``) that the action follows, in table order.
    Without ``kraft`` (a ZooKeeper row) the functions of the KRaft families (``_KRAFT_FAMILIES``) are left out: the
    KRaft controller overrides them, a ZooKeeper cluster never runs them."""
    functions = set(ACTION_FUNCTIONS.get(action_name, ()))
    if not functions:
        return []
    found = []
    for row in rows:
        for function, only in row_functions(row.get("model", "")):
            if only and action_name not in only:
                continue
            if not kraft and function.startswith(_KRAFT_FAMILIES):
                continue
            if _names(function) & functions:
                found.append(row)
                break
    return found
