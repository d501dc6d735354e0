"""Smoke test of the AURA benchmark: its measurements run on a few queries and report the shape
the printed tables and the JSON rely on (timings themselves are not checked)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from actors.bus.local_server import LocalRedisServer
from bench import aura
from bench._harness import Children
from bench._output import write_json
from bench.progress import Progress
from tests.conftest import AURA_RELEASE

pytestmark = [
    pytest.mark.redis,
    pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning"),
]

PER_SET = 3
CONDITIONS = ["literal", "react", "aura_intent"]


@pytest.fixture(scope="module")
def workload() -> aura.Workload:
    return aura.load_workload(AURA_RELEASE, per_set=PER_SET)


@pytest.mark.aura_release
def test_the_workload_reads_both_query_sets_by_path(workload: aura.Workload) -> None:
    assert [len(workload.of(s)) for s in aura.SETS] == [PER_SET, PER_SET]
    v2, factual = workload.of("implicit_v2"), workload.of("factual")
    assert all(q.asker == aura.V2_ASKER and q.registry == "agent_state" and not q.live for q in v2)
    assert all(q.registry == "environment" and q.live and q.scene is workload.town_scene for q in factual)
    assert all(q.asker.split()[0] not in q.text for q in factual)  # nobody asks about themselves
    assert workload.town_scene.source.startswith("town:") and workload.town_digest
    assert workload.of("factual")[0].ask("aura_intent").scene is None  # over the bus: the live town
    assert workload.of("implicit_v2")[0].ask("aura_intent").scene is not None


@pytest.mark.aura_release
def test_the_timed_passes_show_their_progress_on_stderr(workload: aura.Workload) -> None:
    out = io.StringIO()  # not a terminal: plain lines
    params = aura.parse_args(["--repeats", "2"])
    assert not params.quiet and aura.parse_args(["--quiet"]).quiet

    def shown(total: int) -> Progress:
        return Progress(total, desc="embedded", unit="answer", stream=out, lines=2)

    aura.bench_embedded(workload, ["literal"], repeats=2, progress=shown)
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    n = 2 * PER_SET  # queries of a pass
    assert lines[0] == f"embedded: 0/{2 * n} (0%) [00:00<?, ?answer/s]"
    assert lines[1].startswith(f"embedded: {n}/{2 * n} (50%) [") and "answer/s]" in lines[1]
    assert lines[2].startswith(f"embedded: pass 1/2: {n} queries x 1 conditions in ")
    assert lines[3].startswith(f"embedded: {2 * n}/{2 * n} (100%) [")
    assert lines[4].startswith("embedded: pass 2/2: ") and len(lines) == 5


def test_missing_data_fails_with_a_clear_message(tmp_path: Path) -> None:
    with pytest.raises(aura.DataMissingError, match=r"AURA benchmark data not found.*--data"):
        aura.load_workload(tmp_path)


@pytest.mark.aura_release
def test_embedded_latency_bus_latency_tokens_and_the_report(
    workload: aura.Workload, redis_server: LocalRedisServer, tmp_path: Path
) -> None:
    embedded = aura.bench_embedded(workload, CONDITIONS, repeats=1)
    assert [t.condition for t in embedded] == CONDITIONS
    for t in embedded:
        assert [len(t.samples[s]) for s in aura.SETS] == [PER_SET, PER_SET]
        assert len(t.probes) == len(t.answers) == 2 * PER_SET and not t.errors
        assert t.summary()["n"] == 2 * PER_SET and t.summary()["median"] is not None

    with Children(ready_timeout=60, stop_timeout=20) as children:
        bus = aura.bench_bus(redis_server.url, workload, ["aura_intent"], 1, children)
    assert bus.error is None and bus.town_digest_match is True
    found = bus.find("aura_intent")
    assert found is not None and not found.errors
    assert [len(found.samples[s]) for s in aura.SETS] == [PER_SET, PER_SET]
    aura.compare_answers(embedded, bus, workload)
    assert bus.same_answers["implicit_v2"] == [PER_SET, PER_SET]  # an inline scene: the same pipeline
    assert bus.same_answers["factual"][1] == PER_SET

    counter = aura.TokenCounter()
    tokens = aura.count_tokens(workload, CONDITIONS, counter)
    rows = {r.condition: r for r in tokens}
    assert list(rows) == [*CONDITIONS, aura.PACK_ALL]
    assert rows["literal"].calls == [1] * 2 * PER_SET and rows["literal"].by_stage["intent"] == 0
    intent = rows["aura_intent"]
    assert intent.by_stage["intent"] > 0 and intent.by_stage["answer"] > 0
    assert all(c >= 2 for c in intent.calls)  # the IntentInferrer, then at least the answer
    assert set(rows[aura.PACK_ALL].sections) == {"scene", "public", "private", "memories_events", "system"}
    pack = rows[aura.PACK_ALL]
    packed_factual, packed_v2 = pack.mean("factual"), pack.mean("implicit_v2")
    assert packed_factual is not None and packed_v2 is not None
    assert packed_factual > packed_v2  # the live town packs memories too

    params = aura.parse_args(["--queries", str(PER_SET), "--out", str(tmp_path / "aura.json")])
    report = aura.Report(
        params,
        {"cpu_count": 2},
        workload,
        embedded,
        bus,
        tokens,
        counter.method,
        counter.fallback_reason,
        1.0,
    )
    write_json(report, Path(params.out))
    data = json.loads(Path(params.out).read_text())
    assert data["benchmark"] == "bench.aura"
    assert set(data) >= {"params", "machine", "workload", "latency_ms", "prompt_tokens", "checks"}
    assert data["workload"]["queries"] == {"implicit_v2": PER_SET, "factual": PER_SET}
    assert [t["condition"] for t in data["latency_ms"]["embedded"]] == CONDITIONS
    assert set(data["latency_ms"]["embedded"][0]["all"]) == {"n", "median", "p90", "mean", "max"}
    assert data["latency_ms"]["redis"]["timings"][0]["condition"] == "aura_intent"
    assert data["prompt_tokens"]["paper_figure_8"] == {"pack_all": 2050, "aura": [1010, 1170]}
    check = data["checks"]["aura_intent_median_embedded"]
    assert isinstance(check["pass"], bool) and check["value_ms"] is not None
    tokens_check = data["checks"]["aura_intent_prompt_tokens_v2"]
    assert tokens_check["value_tokens"] == pytest.approx(intent.mean("implicit_v2"))
    assert tokens_check["pass"] == (tokens_check["value_tokens"] <= aura.TOKEN_TARGET == 1170)
    text = "\n".join(
        f(report)
        for f in (
            aura.format_latency,
            aura.format_bus_notes,
            aura.format_tokens,
            aura.format_comparison,
            aura.format_checks,
        )
    )
    assert "aura_intent" in text and "pack_all" in text and "2,050" in text
    assert ("PASS" in text) or ("FAIL" in text)
    assert "aura_intent prompt tokens per implicit-v2 query" in text and "target <= 1,170" in text
