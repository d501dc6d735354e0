"""The Node.js example assistant, installed for a test session: node + npm, then ``npm ci``.

``install_node_assistant(dir)`` copies examples/node-assistant (agent.js, package.json and the
committed package-lock.json) into ``dir`` and runs ``npm ci`` there, so the pinned ``redis`` and
``@msgpack/msgpack`` packages come from the lock file. Node.js itself is taken from PATH
(Debian's nodejs and npm, which ``scripts/install-test-deps`` installs). Anything that cannot be
done fails the test with a one-line reason.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "node-assistant"
FILES = ("agent.js", "package.json", "package-lock.json")
MIN_NODE_MAJOR = 18


@dataclass(frozen=True)
class NodeAssistant:
    node: str
    directory: Path

    @property
    def script(self) -> Path:
        return self.directory / "agent.js"

    def command(self, *args: str) -> list[str]:
        return [self.node, str(self.script), *args]


def _run(
    cmd: list[str], *, cwd: Path | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "(no output)"


def _node_major(node: str) -> int:
    out = _run([node, "--version"], timeout=30).stdout.strip()  # v20.20.2
    try:
        return int(out.lstrip("v").split(".")[0])
    except ValueError:
        return 0


def find_node() -> tuple[str, str]:
    """(node, npm) from PATH, or the test fails saying how to install them."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.fail("node and npm are not on PATH (nodejs, npm): run scripts/install-test-deps as root")
    if _node_major(node) < MIN_NODE_MAJOR:
        pytest.fail(f"{node} is older than Node.js {MIN_NODE_MAJOR}, which @msgpack/msgpack 3 needs")
    return node, npm


def install_node_assistant(directory: Path) -> NodeAssistant:
    """The example assistant with its locked dependencies in ``directory`` (``npm ci``)."""
    node, npm = find_node()
    directory.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        shutil.copy2(EXAMPLE / name, directory / name)
    r = _run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=directory)
    if r.returncode != 0:
        pytest.fail(f"npm ci for the Node assistant failed: {_last_line(r.stderr or r.stdout)}")
    return NodeAssistant(node, directory)
