"""Checkpoints: the search state at a level boundary, in one msgpack file.

Written atomically (a temporary file renamed over the old one) periodically, on Ctrl-C and when
a budget runs out; ``--resume`` continues from it to the same final counts as an uninterrupted
run. The file is data only: a header that must match the command resumed, numpy arrays as raw
bytes and the frontier encoded with the model's own codec, never pickle.
"""

from __future__ import annotations

import os
from typing import Any

import msgpack
import numpy as np

from checker.codec import Codec
from checker.errors import BadFileError, WrongModelError
from checker.search import ActionTable, SearchOptions, SearchState
from checker.visited import FingerprintSet, ParentLog
from spec.model import Action, Model

MAGIC = "kmc-checkpoint"
FORMAT = 1


def _identity(model: Model, options: SearchOptions) -> dict[str, Any]:
    return {
        **model.describe(),
        "invariants": sorted(inv.name for inv in options.invariants),
        "symmetry": bool(options.symmetry),
        "deadlock": bool(options.check_deadlock),
    }


def save(path: str, model: Model, options: SearchOptions, st: SearchState) -> None:
    codec = Codec(model.state_types())
    fps, parents, actions = st.log.arrays()
    payload = {
        "magic": MAGIC,
        "format": FORMAT,
        "identity": _identity(model, options),
        "depth": st.depth,
        "generated": st.generated,
        "elapsed": st.elapsed,
        "frontier_base": st.frontier_base,
        "found": st.found,
        "deadlock": st.deadlock,
        "visited": st.visited.array.tobytes(),
        "log_fps": fps.tobytes(),
        "log_parents": parents.tobytes(),
        "log_actions": actions.tobytes(),
        "actions": [a.to_data() for a in st.actions.actions],
        "frontier": [codec.encode(s) for s in st.frontier],
    }
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as f:
        f.write(msgpack.packb(payload, use_bin_type=True))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _array(payload: dict[str, Any], key: str, dtype: Any) -> np.ndarray:
    raw = payload[key]
    if not isinstance(raw, bytes) or len(raw) % np.dtype(dtype).itemsize:
        raise BadFileError(f"checkpoint field {key!r} is corrupt")
    return np.frombuffer(raw, dtype=dtype).copy()


def load(path: str, model: Model, options: SearchOptions) -> SearchState:
    try:
        with open(path, "rb") as f:
            payload = msgpack.unpackb(f.read(), raw=False, strict_map_key=False)
    except FileNotFoundError:
        raise BadFileError(f"checkpoint {path} does not exist; check the path given to --resume") from None
    except (OSError, ValueError, msgpack.UnpackException) as exc:
        raise BadFileError(f"checkpoint {path} is corrupt or truncated ({type(exc).__name__})") from None
    if not isinstance(payload, dict) or payload.get("magic") != MAGIC:
        raise BadFileError(f"{path} is not a kmc checkpoint")
    if payload.get("format") != FORMAT:
        raise BadFileError(f"checkpoint {path} has format {payload.get('format')}, this kmc reads {FORMAT}")
    want = _identity(model, options)
    if payload.get("identity") != want:
        raise WrongModelError(
            f"checkpoint {path} was written for {payload.get('identity')}, not {want}; "
            "resume with the same model, constants and options"
        )
    try:
        codec = Codec(model.state_types())
        visited = FingerprintSet(_array(payload, "visited", np.int64))
        log = ParentLog()
        log.append(
            _array(payload, "log_fps", np.int64),
            _array(payload, "log_parents", np.int32),
            _array(payload, "log_actions", np.int32),
        )
        actions = ActionTable([Action.from_data(a) for a in payload["actions"]])
        frontier = [codec.decode(raw) for raw in payload["frontier"]]
        st = SearchState(
            visited=visited,
            log=log,
            actions=actions,
            frontier=frontier,
            frontier_base=int(payload["frontier_base"]),
            depth=int(payload["depth"]),
            generated=int(payload["generated"]),
            elapsed=float(payload["elapsed"]),
            found={str(k): int(v) for k, v in payload["found"].items()},
            deadlock=None if payload["deadlock"] is None else int(payload["deadlock"]),
        )
    except BadFileError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise BadFileError(f"checkpoint {path} is corrupt ({type(exc).__name__}: {exc})") from None
    if len(visited) != len(log) or st.frontier_base + len(frontier) != len(log):
        raise BadFileError(f"checkpoint {path} is inconsistent (visited and parent log disagree)")
    return st
