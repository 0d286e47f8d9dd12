"""Any Kafka release by its number: the protocol row and the flag set a release has, computed from
the rule table.

``--protocol 3.7.1`` is the release in ZooKeeper mode (0.10.2 to 3.9.x have it),
``--protocol kraft-3.7.1`` in KRaft mode (from 3.3.0, the model's first KRaft row); 4.x has KRaft
mode only, so ``4.0.1`` and ``kraft-4.0.1`` are the same. A release's flags are computed from
``spec.kafka.rules``: a flag is on where its rule's ``since`` releases (by default the rule's
``introduced``; an earlier line's own first release for a backport) and ``until`` put it on by
default, and the mechanism it changes exists in the release's mode
(``spec.kafka.protocols.REQUIRES``, judged with every mechanism whose code the release has, switched
on or not). The row is the newest protocol row of the same mode at or below the release; the flags
that differ from the row's are what the number adds to it. A rule added to the table with its
``introduced`` release (and a row to ``RELEASES``) falls in place: nothing here names a flag.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields

from spec.errors import UsageError
from spec.kafka.protocols import FLAGS, PROTOCOLS, RELEASES, REQUIRES, Features, Release
from spec.kafka.protocols import resolve as resolve_row
from spec.kafka.rules import Rule, flag_rules

#: every Kafka release from 0.10.2.0 to 4.1.x, oldest first (0.x numbers have four parts); the
#: release tags of apache/kafka, with 3.7.2, 3.8.1, 3.9.x, 4.0.x and 4.1.x from their release
#: announcements and commits
KAFKA_RELEASES: tuple[str, ...] = tuple("""
0.10.2.0 0.10.2.1 0.10.2.2 0.11.0.0 0.11.0.1 0.11.0.2 0.11.0.3 1.0.0 1.0.1 1.0.2 1.1.0 1.1.1
2.0.0 2.0.1 2.1.0 2.1.1 2.2.0 2.2.1 2.2.2 2.3.0 2.3.1 2.4.0 2.4.1 2.5.0 2.5.1 2.6.0 2.6.1 2.6.2 2.6.3
2.7.0 2.7.1 2.7.2 2.8.0 2.8.1 2.8.2 3.0.0 3.0.1 3.0.2 3.1.0 3.1.1 3.1.2 3.2.0 3.2.1 3.2.2 3.2.3
3.3.0 3.3.1 3.3.2 3.4.0 3.4.1 3.5.0 3.5.1 3.5.2 3.6.0 3.6.1 3.6.2 3.7.0 3.7.1 3.7.2 3.8.0 3.8.1 3.9.0 3.9.1
4.0.0 4.0.1 4.1.0 4.1.1
""".split())  # noqa: E501

ZOOKEEPER, KRAFT = "ZooKeeper", "KRaft"
KRAFT_PREFIX = "kraft-"
#: the first release of the model's KRaft rows (kraft-3.3: KRaft production-ready, KIP-841) and the
#: first with no ZooKeeper mode (4.0.0: KafkaController.scala and KafkaServer.scala are gone)
FIRST_KRAFT, NO_ZOOKEEPER = "3.3.0", "4.0.0"

# bounded: a hostile name of 5,000 digits is no number
_NUMBER = re.compile(r"\d{1,6}(?:\.\d{1,6}){1,3}")


def version(text: str) -> tuple[int, ...]:
    """A release number as a comparable tuple: 0.x releases have four parts, later ones three
    (``0.10.2`` is ``0.10.2.0``, ``3.5`` is ``3.5.0``)."""
    parts = tuple(int(p) for p in text.split("."))
    width = 4 if parts[0] == 0 else 3
    return parts + (0,) * (width - len(parts))


def _line(v: tuple[int, ...]) -> tuple[int, ...]:
    """The release line a release belongs to (0.10.2.1 -> 0.10.2, 3.7.1 -> 3.7)."""
    return v[:3] if v[0] == 0 else v[:2]


def _introduced(rule: Rule) -> tuple[int, ...] | None:
    match = _NUMBER.match(rule.introduced)
    return version(match.group(0)) if match else None


def on_by_default(rule: Rule, v: tuple[int, ...]) -> bool:
    """Whether ``rule``'s flag is on in release ``v``'s default configuration: a ``since`` release
    at or below it, of its own line unless it is the last one (which holds for every later line),
    and no ``until`` at or below it."""
    if rule.until and v >= version(rule.until):
        return False
    if rule.since is None:
        first = _introduced(rule)
        return first is not None and v >= first
    since = [version(s) for s in rule.since]
    return any(v >= s and (s == since[-1] or _line(v) == _line(s)) for s in since)


def _code_has(rule: Rule, v: tuple[int, ...]) -> bool:
    """Whether release ``v``'s code has the rule's mechanism, on by default or not (``kip-966-elr``
    from 3.7.0)."""
    if rule.until and v >= version(rule.until):
        return False
    first = _introduced(rule)
    return on_by_default(rule, v) or (first is not None and v >= first)


def _features(on: set[str]) -> Features:
    return Features(**{f.name: f.name.replace("_", "-") in on for f in fields(Features)})


def flags_of(number: str, kraft: bool) -> Features:
    """The flag set of release ``number`` in the mode asked for, from the rule table alone."""
    v = version(number)
    rules = flag_rules()
    mode = {"kraft"} if kraft else set()
    default = {flag for flag, rule in rules.items() if flag != "kraft" and on_by_default(rule, v)}
    code = _features(mode | {flag for flag, rule in rules.items() if flag != "kraft"
                             and _code_has(rule, v)})
    return _features(mode | {flag for flag in default if flag not in REQUIRES
                             or REQUIRES[flag][1](code)})


def row_release(row: Release) -> str | None:
    """The release a protocol row is (``kraft-3.5`` is 3.5.0, ``0.10.2`` is 0.10.2.0), None for a
    row that names none."""
    name = row.name.removeprefix(KRAFT_PREFIX)
    if not _NUMBER.fullmatch(name):
        return None
    return ".".join(str(p) for p in version(name))


@dataclass(frozen=True)
class ReleaseFlags:
    """What ``--protocol <number>`` resolves to."""

    asked: str  # the name given (3.7.1, kraft-3.7.1)
    release: str  # the release (3.7.1)
    mode: str  # ZooKeeper or KRaft
    row: str  # the protocol row it is, plus ``differs``
    features: Features  # the release's flags
    differs: tuple[tuple[str, bool], ...]  # the flags whose value is not the row's, in table order


def _parse(name: str) -> tuple[str, bool] | None:
    """(number, KRaft mode) of a release-number name, None for a name of another shape."""
    kraft = name.startswith(KRAFT_PREFIX)
    number = name.removeprefix(KRAFT_PREFIX)
    if not _NUMBER.fullmatch(number):
        return None
    return number, kraft or version(number) >= version(NO_ZOOKEEPER)


def _mode_releases(kraft: bool) -> list[str]:
    if kraft:
        return [r for r in KAFKA_RELEASES if version(r) >= version(FIRST_KRAFT)]
    return [r for r in KAFKA_RELEASES if version(r) < version(NO_ZOOKEEPER)]


def _known(number: str) -> str | None:
    """``number`` if it is a release (spelled in full: ``3.7.1``, ``0.10.2.1``), else None."""
    return number if number in KAFKA_RELEASES else None


def is_release(name: str) -> bool:
    """Whether ``name`` is a release number in a mode it has (``3.7.1``, ``kraft-3.7.1``,
    ``4.0.0``)."""
    parsed = _parse(name)
    return parsed is not None and _known(parsed[0]) in _mode_releases(parsed[1])


def nearest(name: str) -> str:
    """One line for a number that is no release of the model: the releases nearest to it, in the
    mode asked."""
    parsed = _parse(name)
    if parsed is None:
        return ""
    number, kraft = parsed
    v = version(number)
    releases = _mode_releases(kraft)
    prefix = KRAFT_PREFIX if kraft and version(releases[0]) < version(NO_ZOOKEEPER) else ""
    below = [r for r in releases if version(r) <= v]
    above = [r for r in releases if version(r) > v]
    near = [f"{prefix if version(r) < version(NO_ZOOKEEPER) else ''}{r}"
            for r in (below[-1:] + above[:1])]
    mode = (f"KRaft mode (kraft-<release>, from {FIRST_KRAFT})" if kraft
            else f"ZooKeeper mode ({KAFKA_RELEASES[0]} to 3.9.x; kraft-<release> for KRaft mode, "
                 f"{NO_ZOOKEEPER} on KRaft only)")
    return (f"no Kafka release {number} in {mode}; the nearest: {' and '.join(near)} "
            f"(every release: kmc list --releases)")


def lookup(name: str) -> ReleaseFlags:
    """The row and flags of release-number ``name``; a UsageError naming the nearest releases for an
    unknown one."""
    parsed = _parse(name)
    if parsed is None or not is_release(name):
        raise UsageError(f"unknown protocol {name!r}: "
                         + (nearest(name) or "not a protocol row, alias or release "
                                            "number (kmc list --releases)"))
    number, kraft = parsed
    release = _known(number) or number
    features = flags_of(release, kraft)
    v = version(release)
    rows = [(version(rr), row) for row in RELEASES if row.features.kraft == kraft
            and (rr := row_release(row))]
    row = max((r for r in rows if r[0] <= v), key=lambda r: r[0])[1]
    differs = tuple((flag, features.flag(flag)) for flag in FLAGS if features.flag(flag)
                    != row.features.flag(flag))
    return ReleaseFlags(name, release, KRAFT if kraft else ZOOKEEPER, row.name, features, differs)


def mapping() -> list[ReleaseFlags]:
    """Every release in every mode it has, oldest first, ZooKeeper before KRaft
    (``kmc list --releases``)."""
    out = [lookup(r) for r in _mode_releases(False)]
    return out + [lookup(r if version(r) >= version(NO_ZOOKEEPER) else KRAFT_PREFIX + r)
                  for r in _mode_releases(True)]


def same_row(name: str) -> str | None:
    """The row release-number ``name`` runs with no flag changed (``3.5.1`` -> ``3.4.1``), None if
    its flags differ from its row's or it is no release."""
    if not is_release(name):
        return None
    found = lookup(name)
    return None if found.differs else found.row


def release_rows() -> list[dict[str, object]]:
    """``mapping()`` as rows for ``kmc list --releases``."""
    return [{"protocol": m.asked, "release": m.release, "mode": m.mode, "row": m.row,
             "differs": {flag: on for flag, on in m.differs}} for m in mapping()]


def run_description(protocol: str, features: Features) -> dict[str, object]:
    """What a run checked: the name asked for, the release it is (if a number), the row, the flags
    on and those that differ from the row's defaults (a release's own and any ``--feature``), for
    ``--json``, the header and traces."""
    from spec.kafka.protocols import PROTOCOL_ALIASES, RELEASE_BY_NAME

    if protocol in RELEASE_BY_NAME or protocol in PROTOCOL_ALIASES:
        row = RELEASE_BY_NAME[PROTOCOL_ALIASES.get(protocol, protocol)]
        release = None
    else:
        found = lookup(protocol)
        row, release = RELEASE_BY_NAME[found.row], found.release
    differs = tuple((flag, features.flag(flag)) for flag in FLAGS if features.flag(flag)
                    != row.features.flag(flag))
    return {"protocol": protocol, "release": release, "row": row.name,
            "mode": KRAFT if features.kraft else ZOOKEEPER, "flags": list(features.on()),
            "differs_from_row": {flag: on for flag, on in differs}}


def _release_and_mode(protocol: str) -> tuple[str, bool] | None:
    """(release, KRaft mode) of a protocol row, alias or release number; None for a row that names
    no release."""
    from spec.kafka.protocols import PROTOCOL_ALIASES, RELEASE_BY_NAME

    name = PROTOCOL_ALIASES.get(protocol, protocol)
    if name in RELEASE_BY_NAME:
        row = RELEASE_BY_NAME[name]
        release = row_release(row)
        return (release, row.features.kraft) if release is not None else None
    if not is_release(protocol):
        return None
    found = lookup(protocol)
    return found.release, found.mode == KRAFT


def fixed_in(protocol: str) -> dict[str, str]:
    """For each flag off in ``protocol``'s release, the first release at or after it, in its mode,
    whose default configuration has the flag on: the fix on the row's own release line where that
    line has it (KAFKA-18991 for kraft-4.0 is 4.0.1, for kraft-3.5 3.9.1, the next line that has
    it). Flags no later release has are left out, and so is everything for a ``protocol`` that names
    no release."""
    found = _release_and_mode(protocol)
    if found is None:
        return {}
    release, kraft = found
    v = version(release)
    here = flags_of(release, kraft)
    first: dict[str, str] = {}
    for number in _mode_releases(kraft):
        if version(number) < v:
            continue
        flags = flags_of(number, kraft)
        for flag in FLAGS:
            if flag not in first and not here.flag(flag) and flags.flag(flag):
                first[flag] = number
    return first


def resolve(protocol: str, overrides: Mapping[str, bool] | None = None) -> Features:
    """The flags of ``protocol``, a row or alias (``protocols.resolve``) or any release by its
    number (3.7.1, kraft-3.7.1: its row and flags from the rule table), with ``overrides`` (flag
    name -> on/off) applied."""
    if protocol in PROTOCOLS:
        return resolve_row(protocol, overrides)
    return resolve_row(protocol, overrides, base=lookup(protocol).features)
