"""The AppWorld service process: started from AppWorld's venv, reached over HTTP, supervised.

``AppWorldService`` starts ``service.py`` with AppWorld's python on 127.0.0.1 (a free port) or a
unix socket, waits for its ready file, and speaks its JSON endpoints (``/health``, ``/apis``,
``/call``, ``/state``, ``/seed``, ``/clock``). A request that cannot reach the process raises
``AppWorldUnavailable`` (the caller restarts it and puts its world back); an endpoint's refusal
raises ``AppWorldServiceError`` with the service's one-line reason.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import structlog

from actors.appworld._errors import AppWorldServiceError, AppWorldUnavailable
from actors.appworld._install import AppWorldInstall, default_home

log = structlog.get_logger("auratown.appworld")

SERVICE_SCRIPT = Path(__file__).resolve().parent / "service.py"


@dataclass(frozen=True)
class CallResult:
    """One AppWorld API call: its HTTP status, AppWorld's JSON, and the world after it when the
    call changed it (None: nothing changed)."""

    status_code: int
    response: Any
    state: dict[str, Any] | None


class AppWorldService:
    """One AppWorld process. Thread-safe: requests are serialised (AppWorld is not)."""

    def __init__(
        self,
        install: AppWorldInstall,
        *,
        unix_socket: bool = False,
        start_timeout: float = 120.0,
        call_timeout: float = 60.0,
        random_seed: int = 100,
    ) -> None:
        self.install = install
        self.unix_socket = unix_socket
        self.start_timeout = start_timeout
        self.call_timeout = call_timeout
        self.random_seed = random_seed
        self.restarts = 0
        self.pid: int | None = None
        self.url = ""
        self._proc: subprocess.Popen[bytes] | None = None
        self._client: httpx.Client | None = None
        self._dir = Path(tempfile.mkdtemp(prefix="auratown-appworld-"))
        self._lock = threading.RLock()

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> AppWorldService:
        with self._lock:
            if self.alive():
                return self
            self._spawn()
            return self

    def _spawn(self) -> None:
        ready = self._dir / "ready.json"
        ready.unlink(missing_ok=True)
        where = ["--uds", str(self._dir / "appworld.sock")] if self.unix_socket else ["--port", "0"]
        cmd = [
            str(self.install.python),
            str(SERVICE_SCRIPT),
            "--host",
            "127.0.0.1",
            *where,
            "--ready-file",
            str(ready),
            "--random-seed",
            str(self.random_seed),
        ]
        if self.install.data is not None:
            cmd += ["--data", str(self.install.data)]
        log_path = self._dir / "service.log"
        started = time.monotonic()
        with log_path.open("ab") as sink:
            self._proc = subprocess.Popen(
                cmd, stdout=sink, stderr=subprocess.STDOUT, env=self.install.env(), start_new_session=True
            )
        deadline = started + self.start_timeout
        while not ready.exists():
            code = self._proc.poll()
            if code is not None:
                raise AppWorldUnavailable(f"the AppWorld service exited with {code} at start: {self._tail()}")
            if time.monotonic() > deadline:
                self._kill()
                raise AppWorldUnavailable(
                    f"the AppWorld service was not ready within {self.start_timeout:g}s"
                )
            time.sleep(0.05)  # polling a child's ready file: there is nothing to wait on
        info = json.loads(ready.read_text())
        self.url = str(info["url"])
        self.pid = self._proc.pid
        if self._client is not None:
            self._client.close()
        if self.url.startswith("unix:"):
            transport = httpx.HTTPTransport(uds=self.url.removeprefix("unix:"))
            self._client = httpx.Client(
                transport=transport, base_url="http://appworld", timeout=self.call_timeout
            )
        else:
            self._client = httpx.Client(base_url=self.url, timeout=self.call_timeout)
        seconds = round(time.monotonic() - started, 2)
        log.info("appworld service ready", url=self.url, pid=self.pid, seconds=seconds)

    def _tail(self, lines: int = 3) -> str:
        try:
            text = (self._dir / "service.log").read_text(errors="replace").strip().splitlines()
        except OSError:
            return "no output"
        return " | ".join(text[-lines:]) or "no output"

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def restart(self) -> None:
        """A new process after the old one died or hung: counted in ``restarts``."""
        with self._lock:
            self._kill()
            self.restarts += 1
            log.warning("restarting the AppWorld service", restarts=self.restarts, last_output=self._tail())
            self._spawn()

    def _kill(self) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)

    def stop(self) -> None:
        with self._lock:
            self._kill()
            self._proc = None
            if self._client is not None:
                self._client.close()
                self._client = None

    def __enter__(self) -> AppWorldService:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---------------------------------------------------------------- requests

    def _send(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        with self._lock:
            if self._client is None or not self.alive():
                raise AppWorldUnavailable("the AppWorld service is not running")
            try:
                reply = self._client.request(method, path, json=body)
            except httpx.HTTPError as exc:
                raise AppWorldUnavailable(f"the AppWorld service did not answer {path}: {exc}") from exc
        try:
            return reply.status_code, reply.json()
        except ValueError:
            raise AppWorldServiceError(f"{path} answered {reply.status_code} with no JSON") from None

    def _request(self, method: str, path: str, body: Any = None) -> Any:
        status, data = self._send(method, path, body)
        if status >= 400:
            message = data.get("message") if isinstance(data, dict) else None
            raise AppWorldServiceError(f"{path} answered {status}: {message or data}")
        return data

    def health(self) -> dict[str, Any]:
        data: dict[str, Any] = self._request("GET", "/health")
        return data

    def api_docs(self) -> list[dict[str, Any]]:
        """AppWorld's own docs of every API (``prepare_api_docs`` standard form), as served."""
        docs: list[dict[str, Any]] = self._request("GET", "/apis")["apis"]
        return docs

    def call(self, app: str, api: str, args: dict[str, Any]) -> CallResult:
        """One API call. An exception inside AppWorld is its 500, with what it wrote before it
        raised (the state, when it changed): a refusal of the call, not of the service."""
        status, data = self._send("POST", "/call", {"app": app, "api": api, "args": args})
        if not isinstance(data, dict):
            raise AppWorldServiceError(f"/call answered {status} with {type(data).__name__}")
        if status >= 500:
            response = {"message": f"AppWorld failed: {data.get('message', 'no reason given')}"}
            return CallResult(500, response, data.get("state") if data.get("changed") else None)
        if status >= 400:
            raise AppWorldServiceError(f"/call answered {status}: {data.get('message') or data}")
        return CallResult(int(data["status_code"]), data.get("response"), data.get("state"))

    def state(self) -> dict[str, Any]:
        apps: dict[str, Any] = self._request("GET", "/state")["apps"]
        return apps

    def load_state(self, apps: dict[str, Any]) -> None:
        """Replace AppWorld's whole world with ``apps`` (the ``state`` dump format)."""
        self._request("PUT", "/state", {"apps": apps})

    def seed(self, seed: dict[str, Any]) -> dict[str, Any]:
        """A new world from a seed file's JSON (``WorldSeed``); returns its dump."""
        apps: dict[str, Any] = self._request("POST", "/seed", {"seed": seed})["apps"]
        return apps

    def merge(self, app_state: dict[str, Any]) -> dict[str, Any]:
        """A task's records (the seed format's ``apps``) added to the world; returns its dump."""
        return self.merge_seed({"apps": app_state})

    def merge_seed(self, seed: dict[str, Any]) -> dict[str, Any]:
        """A seed's people and records laid over the world (records with the same id replaced)."""
        apps: dict[str, Any] = self._request("POST", "/seed", {"seed": seed, "merge": True})["apps"]
        return apps

    def set_clock(self, now: str) -> None:
        """AppWorld's frozen date-time, ``YYYY-MM-DDTHH:MM:SS``."""
        self._request("POST", "/clock", {"now": now})


def start_service(home: Path | None = None, *, unix_socket: bool = False) -> AppWorldService:
    """The service of the AppWorld installed at ``home`` (None: the default place), started.
    ``AppWorldError`` with the one-line reason when it is not installed or does not start."""
    return AppWorldService(AppWorldInstall(home or default_home()).require(), unix_socket=unix_socket).start()
