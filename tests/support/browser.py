"""Headless Chromium for browser tests: Debian's ``chromium`` and ``chromium-driver`` driven by
selenium through an explicit ``/usr/bin/chromedriver`` service (selenium-manager never downloads).

``browser_binaries()`` installs the two packages with apt-get when they are missing and this
runs as root; otherwise it fails the test with one line saying what to install.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from selenium.webdriver.chrome.webdriver import WebDriver

CHROMEDRIVER = Path("/usr/bin/chromedriver")
CHROMIUM_CANDIDATES = (Path("/usr/bin/chromium"), Path("/usr/bin/chromium-browser"))
PACKAGES = ("chromium", "chromium-driver")


def _chromium() -> Path | None:
    return next((p for p in CHROMIUM_CANDIDATES if p.exists()), None)


def browser_binaries() -> tuple[Path, Path]:
    """(chromium, chromedriver), installing Debian's packages first if needed."""
    chromium = _chromium()
    if chromium is not None and CHROMEDRIVER.exists():
        return chromium, CHROMEDRIVER
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        pytest.fail(f"headless Chromium missing: run `apt-get install -y {' '.join(PACKAGES)}` as root")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", *PACKAGES]):
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, check=False)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            pytest.fail(f"`{' '.join(cmd)}` failed ({done.returncode}): {last}")
    chromium = _chromium()
    if chromium is None or not CHROMEDRIVER.exists():
        pytest.fail(f"apt-get installed {' '.join(PACKAGES)} but {CHROMEDRIVER} or chromium is still missing")
    return chromium, CHROMEDRIVER


@contextmanager
def headless_chromium(width: int = 1500, height: int = 1000) -> Iterator[WebDriver]:
    """A selenium WebDriver for headless Chromium with a private profile; quit on exit."""
    chromium, driver_path = browser_binaries()
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.fail("selenium is missing: pip install -e '.[test]'")
    with tempfile.TemporaryDirectory(prefix="auratown-chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = str(chromium)
        for arg in (
            "--headless=new",
            "--no-sandbox",  # root in a container
            "--disable-dev-shm-usage",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--metrics-recording-only",
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
        ):
            options.add_argument(arg)
        driver = webdriver.Chrome(service=Service(executable_path=str(driver_path)), options=options)
        try:
            yield driver
        finally:
            driver.quit()
