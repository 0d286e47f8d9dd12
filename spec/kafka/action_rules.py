"""Which rows of the Kafka model's rule table an action follows (``ModelInfo.action_rules``: the explorer's list of
enabled actions shows them).

The rule table (``kmc list --rules``, ``spec.kafka.rules``) names, for every rule, the model functions that
implement it (its ``model`` column: ``actions_data._receive_fetch_state, _serve_fetch_state;
log.diverging_epoch``). ``ACTION_FUNCTIONS`` says which of those functions compute each action of the Kafka
model (read from ``spec.kafka.model``'s action table and the methods that emit each action), so an action's
rules are the rows that name one of its functions. A function named with a parenthesis that names actions
(``actions_control._controller_actions (UncleanLeaderElection)``) applies to those actions only. A row whose
flag the protocol lacks is still shown, marked off: it says what a later (or earlier) release does differently.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

#: action name -> the model functions (as the rule table's ``model`` column names them) that compute it
ACTION_FUNCTIONS: Mapping[str, tuple[str, ...]] = {
    # the leader's own actions (actions_data._leader_actions; AlterIsr and KRaft: actions_kraft._alter_leader_actions)
    # and the producer's acknowledgement (clients.LeaderAcks, clients.AllAcks)
    "Produce": ("_leader_actions", "_alter_leader_actions", "_produce_action", "LeaderAcks", "AllAcks", "spec.kafka.log"),
    "AdvanceHighWatermark": ("_advance_hw_action", "AllAcks"),
    "ShrinkIsr": ("_isr_change_action", "_isr_change_request_action", "_partition_change"),
    "ExpandIsr": ("_isr_change_action", "_isr_change_request_action", "_eligible", "_ineligible", "_partition_change"),
    # the fetch path
    "SendFetch": ("_follower_actions",),
    "ServeFetch": ("_serve_fetch_state", "_error", "_serve_non_replica"),
    "ReceiveFetch": ("_receive_fetch_state", "truncate_broker", "follower_truncation"),
    "TruncateOnDivergingEpoch": ("_truncate_on_diverging_action", "truncate_broker"),
    "SendOffsetsForLeaderEpoch": ("_follower_actions",),
    "ServeOffsetsForLeaderEpoch": ("_serve_offsets_state", "_error", "end_offset_kip101", "end_offset_for"),
    "ReceiveOffsetsForLeaderEpoch": ("_receive_offsets_state", "follower_truncation", "truncate_broker"),
    "TruncateToHighWatermark": ("_follower_actions", "truncate_broker"),
    # the controller (ZooKeeper) and the control requests
    "ElectLeader": ("_controller_actions", "_kraft_controller_actions", "_elect_state", "_partition_change"),
    "PreferredLeaderElection": ("_controller_actions", "_kraft_controller_actions", "_elect_state", "_partition_change"),
    "UncleanLeaderElection": ("_controller_actions", "_kraft_controller_actions", "_elect_state", "_partition_change",
                              "unclean_noted"),
    "BumpLeaderEpoch": ("_controller_actions", "_kraft_controller_actions", "_elect_state"),
    "ProcessBrokerFailure": ("_broker_failure_actions",),
    "ProcessBrokerChange": ("_broker_change_state",),
    "ProcessControlledShutdown": ("_controlled_shutdowns", "_controlled_shutdown_actions", "_unfenced"),
    "DeliverLeaderAndIsr": ("_apply_leader_and_isr", "_kraft_apply_leader_and_isr", "_reassigned_apply_leader_and_isr",
                            "_restarts_truncation",
                            "_stale_generation", "_deliveries", "assign", "truncate_broker"),
    "DeliverStopReplica": ("_apply_stop_replica", "_stale_generation", "_deliveries"),
    "LoseControlRequest": ("_deliveries",),
    # broker faults
    "Crash": ("_crash_state", "_kraft_crash", "_broker_failure_actions"),
    "CrashLosingTail": ("_crash_state", "_kraft_crash"),
    "Restart": ("_restart_state", "_reborn", "_kraft_restart_state"),
    "ControlledShutdown": ("_controlled_shutdowns",),
    "Bounce": ("_bounce_state", "_reborn"),
    # KRaft (actions_kraft)
    "FenceBroker": ("_fence_actions", "_fence_running_actions", "_unfenced", "_partition_change"),
    "ProcessAlterPartition": ("_process_alter_partition", "_partition_change", "_ineligible", "_process_alter_isr",
                              "_reassigned", "completed"),
    "LoseAlterPartitionResponse": ("_lose_alter_response",),
    "ReceiveAlterPartitionResponse": ("_receive_alter_response", "_receive_alter_isr_response"),
    "UncleanShutdown": ("_kraft_broker_actions", "_kraft_crash", "_restart_state"),
    "CleanShutdown": ("_clean_shutdown_actions", "_fence_actions", "_partition_change"),
    "UnfenceBroker": ("_unfence_actions", "_candidates", "_partition_change"),
    # partition reassignment on the KRaft rows (actions_reassignment; completion is part of a partition change)
    "ReassignPartition": ("_reassign_actions", "_reassigned", "completed", "_partition_change"),
    # clients (spec.kafka.clients)
    "ConsumerMetadata": ("_metadata_state",),
    "ConsumerSendFetch": ("_consumer_fetch_state", "_delayed_consumer_actions"),
    "ConsumerFetch": ("_consumer_fetch_state",),
    "ServeConsumerFetch": ("_serve_consumer_fetch", "_delayed_consumer_actions"),
    "ReceiveConsumerFetch": ("_receive_consumer_fetch", "_delayed_consumer_actions"),
    "ConsumerFetchFromFollower": ("_fetch_from_follower_actions",),
    "ConsumerSendValidate": ("_validate_state", "_delayed_consumer_actions"),
    "ConsumerValidate": ("_validate_state",),
    "ServeConsumerValidate": ("_validate_answer", "_delayed_consumer_actions"),
    "ReceiveConsumerValidate": ("_receive_consumer_validate", "_delayed_consumer_actions"),
    "ConsumerDisconnect": ("_consumer_actions",),
}

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
    Without ``kraft`` (a ZooKeeper row) the functions of ``actions_kraft`` and ``actions_reassignment`` are left out:
    the KRaft controller overrides them, a ZooKeeper cluster never runs them."""
    functions = set(ACTION_FUNCTIONS.get(action_name, ()))
    if not functions:
        return []
    found = []
    for row in rows:
        for function, only in row_functions(row.get("model", "")):
            if only and action_name not in only:
                continue
            if not kraft and function.startswith(("actions_kraft", "actions_reassignment")):
                continue
            if _names(function) & functions:
                found.append(row)
                break
    return found
