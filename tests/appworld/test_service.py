"""AppWorld's service program (actors/appworld/service.py) run by AppWorld's own python.

One service process serves this module (started once, a few seconds); the test of the ``--data``
and unix-socket start and of SIGTERM starts its own. Requests are plain HTTP, as any client sends
them; nothing of AppWorld is imported here (it lives in its own venv).
"""

from __future__ import annotations

import copy
import json
import signal
import subprocess
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.conftest import wait_until
from world.episodes.apps.seed import WorldSeed
from world.episodes.apps.state import merge_app_data

ROOT = Path(__file__).resolve().parents[2]
SERVICE = ROOT / "actors" / "appworld" / "service.py"
EVERY_COLLECTION = ROOT / "tests" / "fixtures" / "appworld" / "every_collection_seed.yaml"
BUNDLED = ROOT / "bench" / "episodes" / "data"
PERSONAS = ("ines_calder", "tomas_ferreira")


@dataclass
class Running:
    proc: subprocess.Popen[bytes]
    ready: dict[str, Any]
    client: httpx.Client
    log: Path

    def call(self, app: str, api: str, **args: Any) -> dict[str, Any]:
        reply = self.client.post("/call", json={"app": app, "api": api, "args": args})
        assert reply.status_code == 200, reply.text
        out: dict[str, Any] = reply.json()
        return out

    def login(self, app: str, username: str, password: str) -> str:
        answer = self.call(app, "login", username=username, password=password)
        assert answer["status_code"] == 200, answer
        return str(answer["response"]["access_token"])

    def seed(self, seed: dict[str, Any], **extra: Any) -> dict[str, Any]:
        reply = self.client.post("/seed", json={"seed": seed, **extra})
        assert reply.status_code == 200, reply.text
        apps: dict[str, Any] = reply.json()["apps"]
        return apps

    def state(self) -> dict[str, Any]:
        apps: dict[str, Any] = self.client.get("/state").json()["apps"]
        return apps

    def clock(self, now: str) -> None:
        assert self.client.post("/clock", json={"now": now}).status_code == 200


def start(python: Path, tmp: Path, *extra: str) -> Running:
    ready_file = tmp / "ready.json"
    log = tmp / "service.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [str(python), str(SERVICE), "--ready-file", str(ready_file), *extra],
            stdout=sink,
            stderr=subprocess.STDOUT,
            cwd=tmp,
        )

    def ready() -> bool:
        assert proc.poll() is None, log.read_text()
        return ready_file.exists()

    wait_until(ready, timeout=90, what="the AppWorld service's ready file")
    info = json.loads(ready_file.read_text())
    url = str(info["url"])
    if url.startswith("unix:"):
        transport = httpx.HTTPTransport(uds=url.removeprefix("unix:"))
        client = httpx.Client(transport=transport, base_url="http://appworld", timeout=60)
    else:
        client = httpx.Client(base_url=url, timeout=60)
    return Running(proc, info, client, log)


def stop(running: Running) -> int:
    running.client.close()
    if running.proc.poll() is None:
        running.proc.send_signal(signal.SIGTERM)
    return running.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def service(appworld_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    running = start(appworld_python, tmp_path_factory.mktemp("appworld-service"), "--port", "0")
    try:
        yield running
    finally:
        stop(running)


def persona_seed(persona: str) -> dict[str, Any]:
    """A bundled persona's seed.yaml as the registry sends it (``WorldSeed`` JSON)."""
    raw = yaml.safe_load((BUNDLED / persona / "seed.yaml").read_text())
    seed: dict[str, Any] = WorldSeed.model_validate(raw).model_dump(mode="json")
    return seed


def task_app_states(persona: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in sorted((BUNDLED / persona / "tasks").glob("*/task.yaml")):
        task = yaml.safe_load(path.read_text())
        state = (task.get("metadata") or {}).get("app_state")
        if state:
            out.append((path.parent.name, state))
    return out


def by_key(records: list[dict[str, Any]], key: str) -> dict[Any, dict[str, Any]]:
    return {r[key]: r for r in records}


# ---------------------------------------------------------------- start, health, docs


def test_the_ready_file_and_health_say_where_and_what(service: Running) -> None:
    info = service.ready
    assert info["url"].startswith("http://127.0.0.1:")
    assert info["pid"] == service.proc.pid
    assert info["appworld_version"] == "0.1.3.post1"
    assert "admin" not in info["apps"]
    assert {"amazon", "gmail", "phone", "todoist", "splitwise", "spotify", "simple_note"} <= set(info["apps"])
    health = service.client.get("/health").json()
    assert health == {"ok": True, "appworld_version": "0.1.3.post1", "apps": info["apps"], "pid": info["pid"]}


def test_apis_are_appworld_s_own_docs_of_every_app_but_admin(service: Running) -> None:
    apis = service.client.get("/apis").json()["apis"]
    assert len(apis) == 457
    assert {a["app_name"] for a in apis} == set(service.ready["apps"])
    place = next(a for a in apis if (a["app_name"], a["api_name"]) == ("amazon", "place_order"))
    assert place["method"] == "POST" and place["path"] == "/amazon/orders"
    required = {p["name"] for p in place["parameters"] if p["required"]}
    assert required == {"payment_card_id", "address_id", "access_token"}
    assert all(isinstance(a["parameters"], list) for a in apis)
    # The api_docs app answers from the same docs.
    shown = service.call("api_docs", "show_api_doc", app_name="amazon", api_name="place_order")
    assert shown["status_code"] == 200
    assert shown["response"]["parameters"] == place["parameters"]


# ---------------------------------------------------------------- calls over a seeded world


def test_an_amazon_order_debits_the_card_and_mails_the_confirmation(service: Running) -> None:
    world = service.seed(persona_seed("ines_calder"))
    # The products keep the ids the seed names; the card's balance is in AppWorld's bank.
    assert 4103 in by_key(world["amazon"]["products"], "product_id")
    bank = by_key(world["admin"]["payment_cards"], "payment_card_id")
    assert bank[2]["card_number"] == 5412775099315530 and bank[2]["balance"] == 2500.0
    service.clock("2025-04-08T10:00:00")
    token = service.login("amazon", "ines@hollowoak.example", "KraftBox!18")
    added = service.call(
        "amazon",
        "add_product_to_cart",
        access_token=token,
        product_id=4103,
        quantity=1,
        clear_cart_first=True,
    )
    assert added["status_code"] == 200 and added["changed"] is True
    placed = service.call("amazon", "place_order", access_token=token, payment_card_id=2, address_id=2)
    assert placed["status_code"] == 200, placed
    order_id = placed["response"]["order_id"]
    state = placed["state"]
    order = by_key(state["amazon"]["orders"], "order_id")[order_id]
    assert order["payment_card_digits"] == "5530" and order["created_at"] == "2025-04-08T10:00:00"
    (item,) = [i for i in state["amazon"]["order_items"] if i["order_id"] == order_id]
    assert item["product_id"] == 4103 and item["ordered_quantity"] == 1
    paid = round(38.4 + 3.84 + 5.0, 2)  # price, 10% tax, delivery
    assert "cart_entries" not in state["amazon"]
    assert by_key(state["admin"]["payment_cards"], "payment_card_id")[2]["balance"] == pytest.approx(
        2500 - paid
    )
    assert by_key(state["amazon"]["products"], "product_id")[4103]["inventory_quantity"] == 24
    gmail_users = by_key(state["gmail"]["users"], "user_id")
    (mail,) = [m for m in state["gmail"]["emails"] if m["subject"] == "Amazon Order Confirmation"]
    assert gmail_users[mail["sender_id"]]["email"] == "notifications@amazon.com"
    assert [gmail_users[i]["email"] for i in mail["recipient_ids"]] == ["ines@hollowoak.example"]
    shown = service.call("amazon", "show_order", access_token=token, order_id=order_id)
    assert shown["response"]["paid_amount"] == pytest.approx(paid)


def test_gmail_todoist_and_splitwise_calls_change_appworld_s_tables(service: Running) -> None:
    service.seed(persona_seed("tomas_ferreira"))
    service.clock("2025-03-10T18:30:00")
    gmail = service.login("gmail", "tomas@riversidespokes.example", "Chainring-88")
    sent = service.call(
        "gmail", "send_email", access_token=gmail, email_addresses=["aisha@riversidespokes.example"],
        subject="Lakes trip", body="Booked the hostel.",
    )  # fmt: skip
    assert sent["status_code"] == 200 and sent["changed"] is True
    threads = sent["state"]["gmail"]["user_email_threads"]
    mine = by_key(threads, "user_email_thread_id")[sent["response"]["sent_email_thread_id"]]
    assert mine["outgoing"] is True and mine["recipient_email_addresses"] == ["aisha@riversidespokes.example"]
    assert any(t["user_id"] == 2 and t["incoming"] for t in threads)

    todoist = service.login("todoist", "tomas@riversidespokes.example", "SpokesAdmin!9")
    created = service.call(
        "todoist", "create_task", access_token=todoist, project_id=9101, title="Pump the tyres"
    )
    assert created["status_code"] == 200
    task = by_key(created["state"]["todoist"]["tasks"], "task_id")[created["response"]["task_id"]]
    assert task["title"] == "Pump the tyres" and task["created_at"] == "2025-03-10T18:30:00"
    assert by_key(created["state"]["todoist"]["tasks"], "task_id")[9201]["is_completed"] is False

    splitwise = service.login("splitwise", "tomas@riversidespokes.example", "Ferry+Hostel25")
    expense = service.call(
        "splitwise", "record_expense", access_token=splitwise, description="Ferry tickets", paid_amount=90.0,
        payer_email="tomas@riversidespokes.example", group_id=7101,
        debtor_emails=["aisha@riversidespokes.example", "ben.whitlock@example.com"],
    )  # fmt: skip
    assert expense["status_code"] == 200, expense
    new = by_key(expense["state"]["splitwise"]["expenses"], "expense_id")[expense["response"]["expense_id"]]
    assert new["group_id"] == 7101 and new["amount"] == 90.0
    shares = [
        s for s in expense["state"]["splitwise"]["expense_shares"] if s["expense_id"] == new["expense_id"]
    ]
    assert sorted(s["debtor_id"] for s in shares) == [2, 3]


def test_a_read_only_call_is_not_changed_and_carries_no_state(service: Running) -> None:
    service.seed(persona_seed("ines_calder"))
    token = service.login("todoist", "ines@hollowoak.example", "RotaTues-77")
    shown = service.call("todoist", "show_task", access_token=token, task_id=6201)
    assert shown["status_code"] == 200 and shown["response"]["title"] == "Descale the steam oven"
    assert shown["changed"] is False and "state" not in shown
    login = service.call("amazon", "login", username="ines@hollowoak.example", password="KraftBox!18")
    assert login["changed"] is False


def test_search_finds_seeded_records_after_a_seed_and_a_load(service: Running) -> None:
    """AppWorld's full-text index is filled for every searchable table of a seeded or loaded world:
    a search finds the person or product by name, first."""
    for build in ("seed", "load"):
        dump = service.seed(persona_seed("ines_calder"))
        if build == "load":
            service.client.put("/state", json={"apps": dump}).raise_for_status()
        token = service.login("gmail", "ines@hollowoak.example", "OakCrumb-22")
        found = service.call("gmail", "search_users", access_token=token, query="Noor Haddad")
        assert [u["email"] for u in found["response"]][:1] == ["noor@cafelumen.example"], build
        products = service.call("amazon", "search_products", query="bread bags")["response"]
        assert [p["product_id"] for p in products][:1] == [4105], (build, products[:2])


def test_unknown_apps_and_apis_answer_appworld_s_404(service: Running) -> None:
    assert service.call("amazon", "teleport") == {
        "status_code": 404,
        "response": {"message": "No API named 'teleport' found in the amazon app."},
        "changed": False,
    }
    assert service.call("ebay", "login")["response"] == {"message": "No app named 'ebay' found."}
    # admin is AppWorld's bank, not an app an assistant reaches.
    assert service.call("admin", "debit_from_card")["status_code"] == 404


APPWORLD_HTTP = textwrap.dedent(
    """
    import json
    from fastapi.testclient import TestClient
    from appworld.apps import build_main_app
    from appworld.apps.api_lib import set_local_dbs

    set_local_dbs(to_db_home_path=":memory:http", create=True)
    client = TestClient(build_main_app())
    answers = [
        client.get("/amazon/cart", headers={"Authorization": "Bearer forged"}),
        client.get("/amazon/products/abc"),
        client.post("/amazon/account", json={"first_name": "", "email": "nobody", "password": "abc"}),
        client.get("/todoist/projects/1/tasks"),
    ]
    print(json.dumps([[r.status_code, r.json()] for r in answers]))
    """
)


def test_refusals_are_appworld_s_http_api_answers(service: Running, appworld_python: Path) -> None:
    """The same requests sent to AppWorld's own HTTP app (build_main_app) answer the same."""
    done = subprocess.run(
        [str(appworld_python), "-c", APPWORLD_HTTP], capture_output=True, text=True, timeout=120, check=True
    )
    expected = json.loads(done.stdout.strip().splitlines()[-1])
    ours = [
        service.call("amazon", "show_cart", access_token="forged"),
        service.call("amazon", "show_product", product_id="abc"),
        service.call("amazon", "signup", first_name="", email="nobody", password="abc"),
        service.call("todoist", "show_tasks", project_id=1),
    ]
    assert [[o["status_code"], o["response"]] for o in ours] == expected
    assert expected[0][0] == 401 and expected[1][0] == 422 and expected[2][0] == 422
    assert expected[2][1]["message"].startswith("Validation error. Reason: \n")


def test_an_exception_inside_appworld_answers_500_and_the_service_keeps_serving(service: Running) -> None:
    """Without the Amazon notifier's mail account AppWorld raises after it has charged the card:
    one line, the world as the failed call left it, and the next calls are served."""
    seed = persona_seed("ines_calder")
    seed["people"] = [p for p in seed["people"] if p["email"] != "notifications@amazon.com"]
    service.seed(seed)
    token = service.login("amazon", "ines@hollowoak.example", "KraftBox!18")
    service.call("amazon", "add_product_to_cart", access_token=token, product_id=4101, quantity=1)
    args = {"access_token": token, "payment_card_id": 1, "address_id": 1}
    reply = service.client.post("/call", json={"app": "amazon", "api": "place_order", "args": args})
    assert reply.status_code == 500
    body = reply.json()
    assert "Amazon Notifications does not exist" in body["message"] and "\n" not in body["message"]
    assert body["changed"] is True
    assert by_key(body["state"]["admin"]["payment_cards"], "payment_card_id")[1]["balance"] < 400.0
    assert service.client.get("/health").json()["ok"] is True
    assert service.call("amazon", "show_product", product_id=4101)["status_code"] == 200


# ---------------------------------------------------------------- the world's state


def test_the_state_round_trips_after_calls(service: Running) -> None:
    service.seed(persona_seed("tomas_ferreira"))
    service.clock("2025-03-11T08:00:00")
    token = service.login("simple_note", "tomas@riversidespokes.example", "Minutes-0304")
    note = service.call(
        "simple_note", "create_note", access_token=token, title="Ride plan", content="Loop", tags=["x"]
    )
    assert note["status_code"] == 200
    phone = service.login("phone", "4155550210", "Cadence@210")
    assert service.call("phone", "send_text_message", access_token=phone, phone_number="4155550211",
                        message="See you at 8")["status_code"] == 200  # fmt: skip
    dump = service.state()
    assert dump["phone"]["global_text_messages"] and dump["phone"]["user_text_messages"]
    assert all("record_hash" not in r for tables in dump.values() for rows in tables.values() for r in rows)
    put = service.client.put("/state", json={"apps": dump})
    assert put.status_code == 200 and put.json() == {
        "ok": True,
        "records": sum(len(rows) for tables in dump.values() for rows in tables.values()),
    }
    assert service.state() == dump
    # The world put back answers as before, search included.
    found = service.call("simple_note", "search_notes", access_token=token, query="ride plan")
    assert [n["title"] for n in found["response"]][:1] == ["Ride plan"]
    # Tables left out are emptied; the keys are AppWorld's tables' singular + _id.
    assert service.client.put("/state", json={"apps": {"todoist": dump["todoist"]}}).status_code == 200
    assert set(service.state()) == {"todoist"}
    assert "task_id" in service.state()["todoist"]["tasks"][0]


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda s: s["amazon"]["products"][0].update(price=-3), "amazon.products 4101: price"),
        (lambda s: s["amazon"]["products"][0].update(colour="red"), "colour is not a field"),
        (lambda s: s["amazon"].update(gadgets=[]), "amazon.gadgets"),
        (lambda s: s["amazon"]["payment_cards"][1].update(user_id=77), "user_id 77 names no record"),
        (lambda s: s["amazon"]["products"][1].update(product_id=4101), "two records have product_id 4101"),
    ],
)
def test_a_malformed_record_is_refused_and_the_world_stays(
    service: Running, change: Any, reason: str
) -> None:
    before = service.seed(persona_seed("ines_calder"))
    broken = copy.deepcopy(before)
    change(broken)
    reply = service.client.put("/state", json={"apps": broken})
    assert reply.status_code == 422
    message = reply.json()["message"]
    assert reason in message and "\n" not in message, message
    assert service.state() == before


def test_the_clock_moves_created_at(service: Running) -> None:
    service.seed(persona_seed("tomas_ferreira"))
    made = {}
    for now in ("2025-03-12T07:15:00", "2025-04-02T21:40:00"):
        service.clock(now)
        # A token lives 10 to 30 minutes of AppWorld's clock: log in at the new time.
        token = service.login("todoist", "tomas@riversidespokes.example", "SpokesAdmin!9")
        created = service.call("todoist", "create_task", access_token=token, project_id=9101, title=now)
        tasks = by_key(created["state"]["todoist"]["tasks"], "task_id")
        made[now] = tasks[created["response"]["task_id"]]["created_at"]
        today = service.call("phone", "get_current_date_and_time")["response"]
        assert today["date"].endswith(now[:4])
    assert made == {now: now for now in made}
    assert service.client.post("/clock", json={"now": "tomorrow"}).status_code == 422


# ---------------------------------------------------------------- seeds


@pytest.mark.parametrize("persona", PERSONAS)
def test_every_bundled_seed_and_task_app_state_loads(service: Running, persona: str) -> None:
    seed = persona_seed(persona)
    world = service.seed(seed)
    people = seed["people"]
    # Every person is a user of each app they have an account in, with the id the seed gives.
    for person in people:
        for app in person["accounts"]:
            users = by_key(world[app]["users"], "user_id")
            assert person["user_id"] in users, (app, person["email"])
    assert world["supervisor"]["supervisors"][0]["email"] == people[0]["email"]
    for collection_path in (("todoist", "tasks", "task_id"), ("phone", "contacts", "contact_id")):
        app, table, key = collection_path
        ours = {r[key] for r in seed["apps"][app][table]}
        assert ours <= set(by_key(world[app][table], key)), collection_path
    for _name, app_state in task_app_states(persona):
        merged = copy.deepcopy(seed)
        for app, data in app_state.items():
            merged["apps"][app] = merge_app_data(merged["apps"].get(app, {}), data, app=app)
        whole = service.seed(merged)
        service.seed(seed)
        laid_over = service.seed({"apps": app_state}, merge=True)
        assert laid_over == whole


def test_a_task_s_mail_becomes_appworld_s_threads(service: Running) -> None:
    seed = persona_seed("ines_calder")
    ((_name, app_state),) = task_app_states("ines_calder")
    service.seed(seed)
    gmail = service.seed({"apps": app_state}, merge=True)["gmail"]
    threads = by_key(gmail["user_email_threads"], "user_email_thread_id")
    assert threads[7011]["user_id"] == 1 and threads[7011]["incoming"] and not threads[7011]["outgoing"]
    assert (
        threads[7012]["outgoing"]
        and threads[7011]["global_email_thread_id"] == threads[7012]["global_email_thread_id"]
    )
    token = service.login("gmail", "ines@hollowoak.example", "OakCrumb-22")
    shown = service.call("gmail", "show_thread", access_token=token, email_thread_id=7011)
    assert shown["status_code"] == 200
    assert shown["response"]["emails"][0]["subject"] == "April statement"


def test_every_collection_of_our_apps_becomes_appworld_s_records(service: Running) -> None:
    """A seed with each collection our built-in apps document: AppWorld's own APIs then show
    the records with the ids the seed named, and the world round-trips."""
    raw = yaml.safe_load(EVERY_COLLECTION.read_text())
    world = service.seed(WorldSeed.model_validate(raw).model_dump(mode="json"))
    assert service.client.put("/state", json={"apps": world}).status_code == 200
    assert service.state() == world
    service.clock("2025-05-05T09:00:00")
    token = {
        app: service.login(app, "5550001" if app == "phone" else "ada@example.com", "ada-pass1")
        for app in ("amazon", "gmail", "phone", "todoist", "splitwise", "spotify", "simple_note")
    }

    def show(app: str, api: str, **args: Any) -> Any:
        answer = service.call(app, api, **args)
        assert answer["status_code"] == 200, (app, api, answer)
        return answer["response"]

    (order,) = show("amazon", "show_orders", access_token=token["amazon"])
    assert order["order_id"] == 20 and order["order_items"][0]["product_id"] == 70
    assert order["payment_card_digits"] == "1111" and order["address_text"].startswith("1 Way")
    assert show("amazon", "show_cart", access_token=token["amazon"])["cart_items"][0]["quantity"] == 2
    assert show("amazon", "show_wish_list", access_token=token["amazon"])[0]["product_id"] == 70
    assert show("amazon", "show_product_reviews", product_id=70)[0]["review_id"] == 5
    assert show("amazon", "show_product", product_id=70)["variations"][0]["product_id"] == 71
    assert show("amazon", "show_account", access_token=token["amazon"])["is_prime"] is True
    thread = show("gmail", "show_thread", access_token=token["gmail"], email_thread_id=200)
    assert [e["email_id"] for e in thread["emails"]] == [100, 101] and thread["label"] == "work"
    assert thread["emails"][0]["attachments"] == [{"id": 1, "file_name": "plan.pdf"}]
    assert [d["draft_id"] for d in thread["drafts"]] == [300]
    (text,) = show("phone", "search_text_messages", access_token=token["phone"])
    assert text["text_message_id"] == 500 and text["receiver"]["contact_id"] == 400
    assert show("phone", "show_alarm", access_token=token["phone"], alarm_id=600)["repeat_days"] == [
        "monday",
        "friday",
    ]
    task = show("todoist", "show_task", access_token=token["todoist"], task_id=730)
    assert [label["id"] for label in task["labels"]] == [720] and task["section_id"] == 710
    project = show("todoist", "show_project", access_token=token["todoist"], project_id=700)
    assert project["is_favorite"] is True and len(project["collaborators"]) == 2
    comments = show("todoist", "show_task_comments", access_token=token["todoist"], task_id=730)
    assert comments[0]["attachment_file_names"] == ["photo.jpg"]
    expense = show("splitwise", "show_expense", access_token=token["splitwise"], expense_id=810)
    assert [s["debt_amount"] for s in expense["shares"]] == [500.0, 500.0]
    assert (
        show("splitwise", "show_payment", access_token=token["splitwise"], payment_id=820)["paid_amount"]
        == 200
    )
    playlist = show("spotify", "show_playlist", access_token=token["spotify"], playlist_id=930)
    assert sorted(s["id"] for s in playlist["songs"]) == [920, 921]
    assert show("spotify", "show_liked_songs", access_token=token["spotify"])[0]["song_id"] == 920
    assert show("spotify", "show_song_library", access_token=token["spotify"])[0]["song_id"] == 921
    queue = show("spotify", "show_song_queue", access_token=token["spotify"])
    assert [s["song_id"] for s in queue] == [920, 921]
    assert show("simple_note", "search_notes", access_token=token["simple_note"])[0]["note_id"] == 1000
    # Bo has no last name in the seed: AppWorld needs one (the email's domain: bo@example.com).
    assert by_key(world["gmail"]["users"], "user_id")[2]["last_name"] == "Example"


def test_a_seed_appworld_cannot_hold_is_refused_in_one_line(service: Running) -> None:
    before = service.seed(persona_seed("ines_calder"))
    bad = persona_seed("ines_calder")
    bad["people"][1]["accounts"] = {"gmail": "abc"}
    reply = service.client.post("/seed", json={"seed": bad})
    assert reply.status_code == 422
    assert reply.json()["message"] == (
        "gmail.users 2 (dario.brandt@example.com): password: AppWorld needs at least 5 characters, not 'abc'"
    )
    unknown = persona_seed("ines_calder")
    unknown["apps"]["todoist"]["tasks"][0]["mood"] = "sunny"
    reply = service.client.post("/seed", json={"seed": unknown})
    assert (
        reply.status_code == 422
        and reply.json()["message"] == "todoist.tasks 6201: AppWorld has no field for mood"
    )
    assert service.state() == before


# ---------------------------------------------------------------- AppWorld's data, a unix socket, SIGTERM

BASE_DBS = textwrap.dedent(
    """
    import sys
    from appworld.apps.api_lib import save_local_dbs, set_local_dbs
    from appworld.common.utils import import_models_module

    set_local_dbs(to_db_home_path=":memory:base", create=True)
    todoist = import_models_module("todoist")
    todoist.User.create_save(
        first_name="Base", last_name="User", email="base@example.com", password="base-pass", verified=True
    )
    save_local_dbs(from_db_home_path=":memory:base", to_db_home_path=sys.argv[1], app_names=["todoist"])
    """
)


def test_appworld_s_data_over_a_unix_socket_and_a_clean_sigterm(
    appworld_python: Path, tmp_path: Path
) -> None:
    """Base databases saved by AppWorld's own save_local_dbs, in its data layout, are the world a
    service started with --data begins with (and a seed is laid over); SIGTERM ends it cleanly."""
    base_dbs = tmp_path / "appworld-data" / "data" / "base_dbs"
    subprocess.run([str(appworld_python), "-c", BASE_DBS, str(base_dbs)], check=True, timeout=120)
    assert (base_dbs / "todoist.db").exists()
    sock = tmp_path / "aw.sock"
    running = start(appworld_python, tmp_path, "--uds", str(sock), "--data", str(tmp_path / "appworld-data"))
    try:
        assert running.ready["url"] == f"unix:{sock}"
        (base_user,) = running.state()["todoist"]["users"]
        assert base_user["email"] == "base@example.com"
        assert running.seed({}) == running.state()  # an empty seed: AppWorld's data as it was
        seeded = running.seed(
            {"people": [{"first_name": "Lin", "last_name": "Wei", "email": "lin@example.com", "user_id": 5,
                         "accounts": {"todoist": "lin-pass1"}}]}
        )  # fmt: skip
        assert {u["email"] for u in seeded["todoist"]["users"]} == {"base@example.com", "lin@example.com"}
        assert running.login("todoist", "base@example.com", "base-pass")
    finally:
        code = stop(running)
    assert code == 0, running.log.read_text()
    assert not sock.exists()
