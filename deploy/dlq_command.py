"""``auratown dlq list|replay|purge``: inspect, replay and drop a namespace's dead letters.

A dead letter keeps the original entry's bytes (up to the runtime's size limit, with the full
size and SHA-256), a bounded summary of its header, its source stream, the consumer group that
gave up on it, the reason and the attempts. The runtime signs each record with a secret only the
runtime's Redis user can read (``Bus.dead_letter``); ``list`` shows whether that signature holds
(``origin``: ``verified``, else ``UNVERIFIED``). Agents cannot write, trim or delete the stream
(``auratown acl``), so an unverified entry is a forgery or a corrupted record.

``replay`` re-sends only verified, complete records: the bytes go back, with a fresh attempt
count, to the very stream the runtime read them from (its inbox; for a topic, the failed
subscriber's inbox, so other subscribers do not get it twice). Whoever wrote the original entry
could write there, so the replay carries that sender's rights and never the operator's (an
agent's request to ``registry:IDENT`` goes back to ``registry:IDENT``, never to the trusted
``registry``). Then the dead letter is removed: if the process stops between the two steps, the
next replay may send the message once more (at-least-once, as everywhere on the bus).

``--agent IDENT`` lists (or purges) an attached agent's own dead letters (``dlq:IDENT``, written
under its ACL, never signed): they are shown, never replayed.

Only argparse and the standard library are imported here: the CLI starts fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from deploy import arguments

if TYPE_CHECKING:
    from actors.bus import Bus, DeadLetter


def _options(dlq: arguments.Parser) -> None:
    dlq.add_argument("action", choices=("list", "replay", "purge"))
    dlq.add_argument(
        "--id",
        dest="ids",
        action="append",
        default=None,
        metavar="ENTRY",
        help="only this dead letter (its entry id, or the message id); repeatable",
    )
    dlq.add_argument("--reason", default=None, help="only dead letters with this reason")
    dlq.add_argument("--all", action="store_true", help="replay/purge: every dead letter")
    dlq.add_argument("--limit", type=int, default=None, metavar="N", help="list: at most N (oldest first)")
    dlq.add_argument("--json", action="store_true", help="print JSON")
    dlq.add_argument(
        "--agent",
        default=None,
        metavar="IDENT",
        help="list/purge the attached agent IDENT's own dead letters (unverified: never replayed)",
    )


def run(args: argparse.Namespace) -> int:
    from deploy.commands import UserError, open_bus

    selective = bool(args.ids) or args.reason is not None
    if args.action != "list" and not selective and not args.all:
        raise UserError(f"{args.action} needs --id ENTRY, --reason R or --all")
    if args.all and selective:
        raise UserError("--all cannot be combined with --id or --reason")
    if args.limit is not None and args.limit < 1:
        raise UserError(f"--limit must be >= 1, got {args.limit}")
    with open_bus(args.redis, args.namespace, args.settings) as bus:
        if args.agent is not None:
            from actors.bus._keys import InvalidNameError

            if args.action == "replay":
                raise UserError("an agent's own dead letters are never replayed (their origin is unverified)")
            try:
                bus.dead_letter_stream = bus.keys.agent_dead_letters(args.agent)
            except InvalidNameError as exc:
                raise UserError(str(exc)) from None
        letters = _select(bus.dead_letters(), args.ids, args.reason)
        if args.action == "list":
            return _list(bus, letters[: args.limit] if args.limit else letters, args.json)
        if not letters:
            raise UserError(f"no dead letter on namespace {args.namespace!r} matches {_selection(args)}")
        if args.action == "replay":
            return _replay(bus, letters, args.json)
        return _purge(bus, letters, args.json, everything=args.all)


COMMAND = arguments.Command(
    name="dlq",
    run=run,
    summary="list, replay or purge the dead letters of a namespace",
    description="Dead letters are messages a handler refused (permanent error, too many attempts) or "
    "that could not be decoded. `list` shows them, `replay` sends the original bytes again to the "
    "inbox they came from and removes them, `purge` removes them.",
    bus="redis",
    options=_options,
)


def _selection(args: argparse.Namespace) -> str:
    parts = [f"--id {i}" for i in args.ids or []]
    if args.reason is not None:
        parts.append(f"--reason {args.reason}")
    return " ".join(parts) or "--all"


def _select(letters: list[DeadLetter], ids: list[str] | None, reason: str | None) -> list[DeadLetter]:
    from deploy.commands import UserError

    if ids:
        wanted = set(ids)
        missing = wanted - {d.entry_id for d in letters} - {d.message_id for d in letters}
        if missing:
            raise UserError(f"no dead letter with id {', '.join(sorted(missing))}")
        letters = [d for d in letters if d.entry_id in wanted or d.message_id in wanted]
    if reason is not None:
        letters = [d for d in letters if d.reason == reason]
    return letters


def _source(bus: Bus, stream: str) -> str:
    """The address a dead letter came from, or its stream (namespace prefix dropped)."""
    base = bus.keys.base + ":"
    name = stream[len(base) :] if stream.startswith(base) else stream
    return name.removeprefix("inbox:")


def _time(wall: float) -> str:
    return datetime.fromtimestamp(wall, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _origin(d: DeadLetter) -> str:
    return "verified" if d.verified else "UNVERIFIED"


def _as_dict(bus: Bus, d: DeadLetter) -> dict[str, Any]:
    return {
        "id": d.entry_id,
        "time": _time(d.wall_time),
        "reason": d.reason,
        "type": d.message_type,
        "origin": _origin(d),
        "verified": d.verified,
        "source": _source(bus, d.source_stream),
        "stream": d.source_stream,
        "group": d.group,
        "attempts": d.attempts,
        "message_id": d.message_id,
        "consumer": d.consumer,
        "bytes": d.size,
        "kept_bytes": len(d.data),
        "sha256": d.sha256,
        "summary": d.summary,
        "detail": d.detail,
    }


def _list(bus: Bus, letters: list[DeadLetter], as_json: bool) -> int:
    if as_json:
        print(json.dumps([_as_dict(bus, d) for d in letters], indent=2, ensure_ascii=False))
        return 0
    if not letters:
        print(f"no dead letters on namespace {bus.namespace}")
        return 0
    rows = [
        (
            d.entry_id,
            _time(d.wall_time),
            _origin(d),
            d.reason,
            d.message_type or "?",
            _source(bus, d.source_stream),
        )
        for d in letters
    ]
    widths = [max(len(r[i]) for r in [*rows, _HEADER]) for i in range(len(_HEADER))]
    for row, d in zip([_HEADER, *rows], [None, *letters], strict=True):
        attempts = "attempts" if d is None else str(d.attempts)
        line = "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))
        detail = f"  {d.detail.splitlines()[0][:80]}" if d is not None and d.detail else ""
        print(f"{line}  {attempts}{detail}".rstrip())
    forged = sum(not d.verified for d in letters)
    note = f" ({forged} UNVERIFIED: not written by the runtime, never replayed)" if forged else ""
    print(f"{len(letters)} dead letter(s) on namespace {bus.namespace}{note}")
    return 0


_HEADER = ("id", "time (UTC)", "origin", "reason", "type", "source")


def _target(bus: Bus, d: DeadLetter) -> str:
    """Where a retry of the message would go: its inbox, or a topic subscriber's own inbox."""
    topics = bus.keys.base + ":topic:"
    if d.source_stream.startswith(topics):
        return bus.keys.inbox(d.group)
    return d.source_stream


def _replay(bus: Bus, letters: list[DeadLetter], as_json: bool) -> int:
    from actors.bus import FIELD
    from messages import with_attempt

    replayed: list[dict[str, str]] = []
    skipped: list[dict[str, str]] = []
    for d in letters:
        why = _unreplayable(bus, d)
        if why is not None:
            skipped.append({"id": d.entry_id, "why": why})
            continue
        target = _target(bus, d)
        # Back with a fresh attempt count, so a replay gets every retry again.
        new_id = bus.transport.add(target, {FIELD: with_attempt(d.data, 1)})
        bus.transport.delete_entries(bus.keys.dead_letters, [d.entry_id])
        replayed.append({"id": d.entry_id, "to": _source(bus, target), "entry": new_id})
    if as_json:
        print(json.dumps({"replayed": replayed, "skipped": skipped}, indent=2))
    else:
        for r in replayed:
            print(f"replayed {r['id']} to {r['to']} (entry {r['entry']})")
        for s in skipped:
            print(f"skipped {s['id']}: {s['why']}", file=sys.stderr)
        print(f"{len(replayed)} replayed, {len(skipped)} skipped")
    return 1 if skipped else 0


def _unreplayable(bus: Bus, d: DeadLetter) -> str | None:
    """Why a dead letter is not sent again, or None."""
    if not d.verified:
        return "origin UNVERIFIED: the runtime did not write this record"
    if not d.data:
        return "no original bytes"
    if d.truncated:
        return f"only {len(d.data)} of its {d.size} bytes were kept"
    if not bus.keys.owns(d.source_stream) or not d.source_stream.startswith(
        (bus.keys.base + ":inbox:", bus.keys.base + ":topic:")
    ):
        return f"{d.source_stream!r} is not an inbox or topic of the namespace"
    return None


def _purge(bus: Bus, letters: list[DeadLetter], as_json: bool, *, everything: bool) -> int:
    ids = [d.entry_id for d in letters]
    for i in range(0, len(ids), 1000):
        bus.transport.delete_entries(bus.keys.dead_letters, ids[i : i + 1000])
    if as_json:
        print(json.dumps({"purged": ids}, indent=2))
    else:
        what = "every dead letter" if everything else f"{len(ids)} dead letter(s)"
        print(f"purged {what} ({len(ids)}) from namespace {bus.namespace}")
    return 0
