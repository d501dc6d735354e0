"""``auratown acl``: the Redis ACL of an attached agent; and the daemon's identity policies.

An attached agent connects as its own Redis ACL user IDENT. The lines printed here give it
exactly what the attach protocol needs on one namespace, and nothing else:

- read (through the inbox group) and acknowledge its own inbox(es); its own state/seen keys;
- its own reply and control streams and liveness key: the process id of its bus must be
  ``IDENT.<anything>`` (``actors.bus._keys.identity_process_id``);
- append only (``%W~``: never read) to the reply streams of the asks it answers, to
  ``registry:IDENT`` (its identity-bound probe registry), to the episode addresses
  (``user.*``, ``registry.*``) unless ``--no-episodes``, and to ``--send`` addresses;
- its own dead-letter stream ``dlq:IDENT``; never the runtime's ``dlq`` (which ``dlq replay``
  re-sends from) nor its signing secret;
- presence (the hash of processes, and whether a process is alive);
- no other command: no KEYS/SCAN, FLUSH*, CONFIG, scripts, Pub/Sub.

Only argparse and the standard library are imported at start-up.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import secrets
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deploy import arguments

if TYPE_CHECKING:
    from actors.runtime import Host
    from messages.probes import PolicyTable

PREFIX = "auratown"
_IDENTITY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_]{0,63}$")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:\-]{0,199}$")
_NAMESPACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}$")
_PATTERN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:\-]{0,198}\*?$")
RESERVED = frozenset({"world", "clock", "registry", "env", "grader", "default"})
"""Identities that would name (and so read) a built-in role's inbox, or Redis's own user."""

COMMANDS = (
    # connecting (AUTH is always allowed)
    "+ping +hello +client|setname +client|id",
    # streams: own inbox via the consumer group; own reply/control streams; appends elsewhere
    "+xadd +xread +xreadgroup +xack +xclaim +xautoclaim +xpending +xlen +xrange +xtrim +xdel",
    "+xgroup|create +xgroup|createconsumer +xgroup|delconsumer +xinfo|groups +xinfo|consumers",
    # presence, liveness, own state and processed-id set
    "+hset +hdel +hgetall +get +set +exists +del +pexpire +expire +zscore +zadd +zremrangebyrank",
)


class AclError(ValueError):
    """Bad input for an ACL: printed as a one-line error."""


def password_hash(password: str) -> str:
    """The ACL file form of a password: ``#`` and its SHA-256 (the file never holds it in clear)."""
    return "#" + hashlib.sha256(password.encode()).hexdigest()


def _check(regex: re.Pattern[str], value: str, what: str) -> str:
    if not regex.match(value):
        raise AclError(f"invalid {what} {value!r}")
    return value


def agent_key_rules(
    identity: str,
    namespace: str,
    *,
    addresses: tuple[str, ...] = (),
    sends: tuple[str, ...] = (),
    episodes: bool = True,
) -> list[str]:
    """The key rules (``~``, ``%R~``, ``%W~``) of agent ``identity`` on ``namespace``."""
    _check(_IDENTITY, identity, "identity (letters, digits and _)")
    if identity.casefold() in RESERVED:
        raise AclError(f"identity {identity!r} is reserved: it names a built-in role")
    _check(_NAMESPACE, namespace, "namespace")
    base = f"{PREFIX}:{{{namespace}}}"
    rules = []
    for address in addresses or (identity,):
        _check(_NAME, address, "address")
        head = re.split(r"[.:]", address)[0].casefold()
        if address.startswith("_") or head in RESERVED or head == "user":
            raise AclError(f"address {address!r} belongs to the town or the runtime, not to an agent")
        rules += [f"~{base}:inbox:{address}", f"~{base}:state:{address}", f"~{base}:seen:{address}"]
    rules += [
        f"~{base}:inbox:_reply.{identity}.*",
        f"~{base}:inbox:_ctl.{identity}.*",
        f"~{base}:alive:{identity}.*",
        f"~{base}:presence",
        f"%R~{base}:alive:*",
        f"%W~{base}:inbox:_reply.*",
        f"%W~{base}:inbox:registry:{identity}",
        f"~{base}:dlq:{identity}",
    ]
    if episodes:
        rules += [f"%W~{base}:inbox:user.*", f"%W~{base}:inbox:registry.*"]
    for pattern in sends:
        _check(_PATTERN, pattern, "--send address (letters, digits, _ . : - and an optional final *)")
        rules.append(f"%W~{base}:inbox:{pattern}")
    return rules


def agent_acl_line(identity: str, namespace: str, password: str, **kw: Any) -> str:
    """One ``users.acl`` line: the agent's user, its password hash, its commands and keys."""
    keys = agent_key_rules(identity, namespace, **kw)
    return " ".join(
        ["user", identity, "reset", "on", password_hash(password), "resetchannels", "-@all", *COMMANDS, *keys]
    )


def operator_acl_line(password: str, user: str = "default") -> str:
    """The operator's user (the daemon, workers, benchmarks, CLI): everything."""
    return f"user {user} on {password_hash(password)} ~* &* +@all"


def _read_password(args: argparse.Namespace) -> tuple[str, bool]:
    if args.password is not None:
        return args.password, False
    if args.password_file is not None:
        try:
            return Path(args.password_file).read_text().strip(), False
        except OSError as exc:
            raise AclError(f"cannot read --password-file: {exc.strerror}: {args.password_file}") from None
    return secrets.token_urlsafe(24), True


def run(args: argparse.Namespace) -> int:
    try:
        password, generated = _read_password(args)
        if not password:
            raise AclError("the password is empty")
        lines = [
            agent_acl_line(
                args.agent,
                args.namespace,
                password,
                addresses=tuple(args.address or ()),
                sends=tuple(args.send or ()),
                episodes=not args.no_episodes,
            ),
        ]
        if args.operator_password is not None:
            lines.insert(0, operator_acl_line(args.operator_password))
    except AclError as exc:
        print(f"auratown acl: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines))  # only `user` lines: an ACL file has no comments
    print(
        f"agent {args.agent} on namespace {args.namespace}: its bus process id must start with "
        f"'{args.agent}.', its probe requests go to registry:{args.agent}",
        file=sys.stderr,
    )
    if generated:
        print(f"generated password for {args.agent}: {password}", file=sys.stderr)
    return 0


def _options(p: arguments.Parser) -> None:
    p.add_argument("--agent", required=True, metavar="IDENT", help="the agent's identity and Redis user")
    arguments.add_namespace_option(p, what="the namespace")
    p.add_argument(
        "--address",
        action="append",
        metavar="ADDR",
        help="an address whose inbox the agent serves (repeatable; default: IDENT)",
    )
    p.add_argument(
        "--send",
        action="append",
        metavar="ADDR",
        help="another address (or prefix*) the agent may send to (repeatable)",
    )
    p.add_argument(
        "--no-episodes",
        action="store_true",
        help="no sends to episode addresses (user.*, registry.*)",
    )
    p.add_argument("--password", default=None, help="the agent's password (default: a random one)")
    p.add_argument("--password-file", default=None, metavar="FILE", help="read the password from FILE")
    p.add_argument(
        "--operator-password",
        default=None,
        metavar="PW",
        help="also print the operator's (default user's) line with this password",
    )


COMMAND = arguments.Command(
    name="acl",
    run=run,
    summary="print the Redis ACL lines of an attached agent (for users.acl)",
    description="Print a users.acl line giving agent IDENT only its own inbox, reply and control "
    "streams, the requests it may send (registry:IDENT, episode addresses, --send) and presence "
    "on one namespace. See deploy/redis/README.md.",
    options=_options,
)


# ---------------------------------------------------------------- the daemon's identity policies


def add_daemon_options(daemon: argparse.ArgumentParser) -> None:
    """``auratown daemon --policy-file FILE --identity IDENT``: serve ``registry:IDENT``."""
    daemon.add_argument(
        "--policy-file",
        default=None,
        metavar="FILE",
        help="registry: serve registry:IDENT for each identity of this JSON policy table "
        '({"default": {...}, "identities": {"IDENT": {"allow": [...], "private": true} | null}})',
    )
    daemon.add_argument(
        "--identity",
        action="append",
        metavar="IDENT",
        help="registry: also serve registry:IDENT under the default (public-only) policy (repeatable)",
    )


_POLICY_FIELDS = frozenset({"allow", "deny", "private", "act_as"})


def load_policy_table(path: str) -> PolicyTable:
    """The policy table in ``path``; ``ValueError`` with a one-line reason if it is not one."""
    from pydantic import ValidationError

    from messages.probes import PolicyTable

    try:
        raw = json.loads(Path(path).read_text())
    except OSError as exc:
        raise ValueError(f"cannot read the policy file {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"the policy file {path} is not JSON: {exc}") from None
    if not isinstance(raw, dict) or set(raw) - {"default", "identities"}:
        raise ValueError(f"the policy file {path} must be an object with 'default' and 'identities'")
    policies = [raw.get("default") or {}, *(p or {} for p in (raw.get("identities") or {}).values())]
    for policy in policies:
        unknown = set(policy) - _POLICY_FIELDS if isinstance(policy, dict) else set()
        if unknown:  # a misspelt "private" must not silently mean public-only (or the reverse)
            raise ValueError(f"unknown policy field(s) in {path}: {', '.join(sorted(unknown))}")
    try:
        table = PolicyTable.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"bad policy file {path}: {where}: {first['msg']}") from None
    for identity in table.identities:
        if not _IDENTITY.match(identity):
            raise ValueError(f"bad policy file {path}: invalid identity {identity!r}")
    return table


def spawn_policy_registries(host: Host, args: argparse.Namespace, roles: list[str]) -> list[str]:
    """The daemon's ``registry:IDENT`` actors (with the registry role and a policy file or
    ``--identity``); returns their addresses."""
    policy_file = getattr(args, "policy_file", None)
    identities = getattr(args, "identity", None) or []
    if not policy_file and not identities:
        return []
    if "registry" not in roles:
        raise ValueError("--policy-file and --identity need the registry role")
    from actors.roles.registry import spawn_identity_registries
    from messages.probes import PolicyTable

    table = load_policy_table(policy_file) if policy_file else PolicyTable()
    return spawn_identity_registries(host, table, identities)
