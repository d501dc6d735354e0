"""The live view (``auratown daemon --http``): its JSON endpoints and operator gate on an
in-process town, and the page itself in headless Chromium against a daemon on the private Redis:
a tick shows, an injected event reaches the feed, operators see private state and probe calls
and the public does not."""

from __future__ import annotations

import json
import socket
import subprocess
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from actors.bus import Bus, MemoryTransport
from actors.runtime import Host
from actors.runtime.metrics import metrics_registry, metrics_route
from actors.town import TownClient, TownConfig, embedded_town, ensure_config, spawn_town
from deploy.web.server import LiveView, LiveViewConfig, ScrapeAddressError, parse_address, start_live_view
from messages.town import InjectEvent
from tests.conftest import Processes, auratown, wait_until
from tests.support.browser import headless_chromium
from tests.unit.test_metrics import parse_exposition, value

pytestmark = pytest.mark.redis


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def fetch(
    url: str, headers: dict[str, str] | None = None, *, follow: bool = True
) -> tuple[int, dict[str, str], bytes]:
    opener = urllib.request.build_opener() if follow else urllib.request.build_opener(_NoRedirect)
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with opener.open(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def fetch_json(url: str, headers: dict[str, str] | None = None) -> Any:
    status, _, body = fetch(url, headers)
    assert status == 200, (url, status, body[:200])
    return json.loads(body)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ---------------------------------------------------------------- the server, in process


@pytest.fixture
def town_view() -> Iterator[tuple[LiveView, TownClient]]:
    bus = Bus(MemoryTransport(), "t-view")
    config, _ = ensure_config(
        bus, TownConfig(definition=embedded_town(), seed=42, start_paused=True, ticks_per_second=0)
    )
    host = Host(bus, name="live-view-test")
    spawn_town(host, config)
    host.start()
    live = start_live_view(
        bus,
        config.definition,
        LiveViewConfig(operator_token="s3cret", scrape_address=("127.0.0.1", 0)),
        extra_routes={"/metrics": metrics_route(metrics_registry(host))},
        refresh_interval=0.2,
    )
    try:
        yield live, TownClient(bus, timeout=20)
    finally:
        live.stop()
        host.stop()
        bus.close()


def test_endpoints_and_the_operator_gate(town_view: tuple[LiveView, TownClient]) -> None:
    live, client = town_view
    base = live.url.rstrip("/")
    town = fetch_json(base + "/api/town")
    assert (town["width"], town["height"]) == (60, 60)
    assert len(town["agents"]) == 5 and any(loc["name"] == "Town Square" for loc in town["locations"])

    client.step(3, wait=30)
    state = wait_until(
        lambda: (s := fetch_json(base + "/api/state"))["last_tick"] and s["last_tick"]["tick"] >= 2 and s,
        timeout=20,
        what="the view to show tick 2",
    )
    assert state["operator"] is False and len(state["state"]["agents"]) == 5
    assert all(a["private"] is None for a in state["state"]["agents"])

    client.inject(InjectEvent(kind="celebration", description="a lantern parade", location="Town Square"))
    events = wait_until(
        lambda: [e for e in fetch_json(base + "/api/events")["items"] if e["kind"] == "celebration"],
        timeout=10,
        what="the injected event on /api/events",
    )
    assert events[0]["description"] == "a lantern parade" and events[0]["source"] == "environment"

    # Operators: a bearer token, or ?token= once, which sets a cookie and drops the token from the URL.
    assert fetch(base + "/api/audit")[0] == 403
    assert fetch(base + "/api/audit", {"Authorization": "Bearer wrong"})[0] == 403
    assert fetch(base + "/?token=wrong")[0] == 403
    op = {"Authorization": "Bearer s3cret"}

    def operator_state() -> Any:
        s = fetch_json(base + "/api/state", op)
        return all(a["private"] for a in s["state"]["agents"]) and s

    private = wait_until(operator_state, timeout=10, what="private state for the operator")
    assert private["operator"] is True
    assert fetch_json(base + "/api/audit", op)["items"] == []
    status, headers, _ = fetch(base + "/?token=s3cret", follow=False)
    assert status == 303 and headers["Location"] == "/"
    cookie = headers["Set-Cookie"].split(";")[0]
    assert "s3cret" not in cookie and "HttpOnly" in headers["Set-Cookie"]
    assert fetch_json(base + "/api/state", {"Cookie": cookie})["operator"] is True
    assert fetch(base + "/api/audit", {"Cookie": cookie})[0] == 200

    # The page and its assets are served with a strict CSP; extra routes are mounted as given.
    status, headers, body = fetch(base + "/")
    assert status == 200 and b'<canvas id="map"' in body
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert fetch(base + "/static/app.js")[0] == 200 and fetch(base + "/static/app.css")[0] == 200
    # Extra routes (the daemon's /metrics) are for operators only.
    assert fetch(base + "/metrics")[0] == 403
    assert fetch(base + "/metrics", {"Authorization": "Bearer wrong"})[0] == 403
    status, headers, body = fetch(base + "/metrics", op)
    assert status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
    samples = parse_exposition(body.decode())
    assert value(samples, "auratown_actors", state="alive") >= 5  # the town's actors, scraped live
    assert value(samples, "auratown_info", name="live-view-test") == 1
    assert parse_exposition(fetch(base + "/metrics", {"Cookie": cookie})[2].decode())
    assert fetch(base + "/nope")[0] == 404


def test_the_scrape_address_answers_the_metrics_and_nothing_else(
    town_view: tuple[LiveView, TownClient],
) -> None:
    live, client = town_view
    scrape_url = live.scrape_url("/metrics")
    assert live.scrape_address is not None and live.scrape_address[0] == "127.0.0.1"
    assert scrape_url == f"http://127.0.0.1:{live.scrape_address[1]}/metrics"
    assert live.scrape_address[1] != live.address[1]
    client.step(1, wait=30)

    # No token there: the address the operator chose is the gate. The handler counts are read at
    # each scrape: the tick's handlers show.
    status, headers, body = fetch(scrape_url)
    assert status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
    counts = parse_exposition(body.decode())["auratown_handler_latency_seconds_count"]
    assert {ls["actor_type"] for ls, _ in counts} >= {"ClockActor", "WorldActor"}
    assert fetch(scrape_url, {"Authorization": "Bearer wrong"})[0] == 200  # a token is not looked at
    # ... and nothing else: not the page, not the state, not the operators' cookie.
    scrape_base = scrape_url.removesuffix("/metrics")
    for path in ("/", "/api/state", "/api/audit", "/?token=s3cret", "/healthz"):
        status, headers, _ = fetch(scrape_base + path, follow=False)
        assert status == 404 and "Set-Cookie" not in headers, path
    # The page's address is the same server's: its counters saw the scrapes too (a request is
    # counted once its answer is written, so the last one may be counted just after it arrived).
    wait_until(lambda: live.status()["served"] >= 7, what="the seven requests counted")


def test_a_taken_scrape_address_is_told_apart_from_the_pages() -> None:
    bus = Bus(MemoryTransport(), "t-scrape-taken")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ScrapeAddressError):
            start_live_view(bus, embedded_town(), LiveViewConfig(scrape_address=("127.0.0.1", port)))
        with pytest.raises(OSError) as err:
            start_live_view(bus, embedded_town(), LiveViewConfig(port=port))
        assert not isinstance(err.value, ScrapeAddressError)
    bus.close()


def test_the_event_stream_sends_state_and_events(town_view: tuple[LiveView, TownClient]) -> None:
    live, client = town_view
    client.step(1, wait=30)
    client.inject(InjectEvent(kind="weather", description="a sudden downpour"))
    wait_until(live.feed.events, timeout=10, what="the event in the feed")
    frames: dict[str, Any] = {}
    with urllib.request.urlopen(live.url + "api/stream", timeout=10) as stream:
        name = None
        while not {"hello", "state", "events"} <= frames.keys():
            line = stream.readline().decode().rstrip("\n")
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: ") and name:
                frames[name] = json.loads(line[6:])
    assert frames["hello"] == {"operator": False}
    assert frames["events"][-1]["description"] == "a sudden downpour"
    assert "audit" not in frames


@pytest.mark.parametrize(
    ("text", "expected"),
    [("127.0.0.1:8080", ("127.0.0.1", 8080)), (":0", ("127.0.0.1", 0)), ("9000", ("127.0.0.1", 9000)),
     ("[::1]:81", ("::1", 81)), ("0.0.0.0:80", ("0.0.0.0", 80))],
)  # fmt: skip
def test_http_addresses(text: str, expected: tuple[str, int]) -> None:
    assert parse_address(text) == expected


@pytest.mark.parametrize("text", ["host:", "host:http", "1:70000"])
def test_bad_http_addresses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_address(text)


# ---------------------------------------------------------------- the page, in headless Chromium


def test_the_page_in_headless_chromium(
    processes: Processes, redis_url: str, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from selenium.webdriver.common.by import By

    token = f"op-{uuid.uuid4().hex}"
    monkeypatch.setenv("AURATOWN_OPERATOR_TOKEN", token)  # the daemon's default --operator-token
    port = free_port()
    base_args = ("--redis", redis_url, "--namespace", namespace)
    processes.start_module(
        "deploy.cli",
        "daemon",
        *base_args,
        "--seed",
        "42",
        "--speed",
        "4",
        "--decision-timeout",
        "20",
        "--http",
        f"127.0.0.1:{port}",
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"

    def serving() -> bool:
        try:
            return fetch(base + "/healthz")[0] == 200
        except OSError:
            return False

    wait_until(serving, timeout=60, what="the daemon's live view")

    with headless_chromium() as driver:
        driver.get(base + "/")
        tick = driver.find_element(By.ID, "tick")
        first = wait_until(
            lambda: tick.text.isdigit() and int(tick.text), timeout=30, what="a tick on the page"
        )
        wait_until(
            lambda: tick.text.isdigit() and int(tick.text) > first, timeout=30, what="the tick to advance"
        )
        agents = driver.find_elements(By.CSS_SELECTOR, "#agents .agent")
        assert len(agents) == 5 and "Lin Wei" in driver.find_element(By.ID, "agents").text
        assert "Town Square" not in driver.find_element(By.ID, "legend").text  # places by type
        assert "park" in driver.find_element(By.ID, "legend").text
        assert (
            driver.execute_script(  # the map was drawn: not one flat colour
                "const c = document.getElementById('map'); const d = c.getContext('2d')"
                ".getImageData(0, 0, c.width, c.height).data; const s = new Set();"
                "for (let i = 0; i < d.length; i += 4 * 97) s.add(d[i] << 16 | d[i+1] << 8 | d[i+2]);"
                "return s.size;"
            )
            > 5
        )

        description = f"two vendors argue over a stall ({uuid.uuid4().hex[:6]})"
        injected = auratown("inject", "argument", description, "--location", "Town Square", *base_args)
        assert injected.returncode == 0, injected.stderr
        feed = driver.find_element(By.ID, "feed")
        wait_until(lambda: description in feed.text, timeout=20, what="the injected event in the feed")
        item = feed.find_element(By.CSS_SELECTOR, "li[data-kind='argument']")
        assert "Town Square" in item.text and "injected" in item.text

        # The public view: no private state, no probe calls.
        assert driver.find_elements(By.CSS_SELECTOR, "#agents .private") == []
        assert not driver.find_element(By.ID, "audit-panel").is_displayed()
        assert driver.find_element(By.ID, "role").text == "public view"
        assert not driver.find_element(By.ID, "logout").is_displayed()

        # A probe call to audit, then the operator's view of the same page.
        asked = auratown("ask", "How is Lin Wei doing?", "--as", "Zhang Hao", *base_args)
        assert asked.returncode == 0, asked.stderr
        driver.get(f"{base}/?token={token}")
        assert "token" not in driver.current_url  # kept in an HttpOnly cookie instead
        wait_until(
            lambda: len(driver.find_elements(By.CSS_SELECTOR, "#agents .private")) == 5,
            timeout=20,
            what="every agent's private state for the operator",
        )
        assert "goal:" in driver.find_element(By.ID, "agents").text
        assert driver.find_element(By.ID, "role").text == "operator view"
        audit = driver.find_element(By.ID, "audit")
        wait_until(lambda: "agent." in audit.text, timeout=20, what="probe calls in the operator's view")
        assert driver.find_element(By.ID, "audit-panel").is_displayed()
        assert driver.find_element(By.ID, "logout").is_displayed()
        assert description in driver.find_element(By.ID, "feed").text

        # Leaving the operator view drops the cookie.
        driver.get(base + "/logout")
        wait_until(
            lambda: driver.find_element(By.ID, "role").text == "public view", timeout=10, what="public"
        )
        wait_until(lambda: len(driver.find_elements(By.CSS_SELECTOR, "#agents .agent")) == 5, timeout=10)
        assert driver.find_elements(By.CSS_SELECTOR, "#agents .private") == []

    assert fetch(base + "/api/audit")[0] == 403
    public = fetch_json(base + "/api/state")
    assert public["operator"] is False and all(a["private"] is None for a in public["state"]["agents"])
