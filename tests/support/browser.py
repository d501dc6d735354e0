"""Headless Chromium for browser tests: Debian's ``chromium`` and ``chromium-driver`` driven by
selenium through an explicit ``/usr/bin/chromedriver`` service (selenium-manager never downloads).

``browser_binaries()`` only looks for them: ``scripts/install-test-deps`` (run by the README's test
command) installs them; when they are missing the test fails with one line naming that script.
"""

from __future__ import annotations

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
    """(chromium, chromedriver), or the test fails saying how to install them."""
    chromium = _chromium()
    if chromium is None or not CHROMEDRIVER.exists():
        pytest.fail(
            f"headless Chromium missing ({' '.join(PACKAGES)}): run scripts/install-test-deps as root"
        )
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
