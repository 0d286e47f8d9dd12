"""Reading and writing traces. Our own JSON format (``.json``); the traces package extends this
with ITF JSON and msgpack. Nothing here ever executes or unpickles file content."""

from __future__ import annotations

import json
import os
import re
from typing import Any

from spec.model import state_to_data
from traces.trace import Trace

FORMAT = "kmc-trace"
VERSION = 1


def trace_to_data(trace: Trace) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "version": VERSION,
        "header": trace.header,
        "invariant": trace.invariant,
        "violation_index": trace.violation_index,
        "explanation": trace.explanation,
        "initial": state_to_data(trace.initial),
        "steps": [{"action": step.action.to_data(), "state": state_to_data(step.state)} for step in trace.steps],
    }


def save_trace(trace: Trace, path: str) -> str:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        json.dump(trace_to_data(trace), f, indent=1)
        f.write("\n")
    return path


def default_trace_path(directory: str, trace: Trace) -> str:
    header = trace.header
    parts = [header.get("model", "model")]
    if header.get("protocol"):
        parts.append(str(header["protocol"]))
    parts.append(trace.invariant or "trace")
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", "-".join(parts))
    return os.path.join(directory, f"{name}.json")
