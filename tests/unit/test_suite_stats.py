"""Statistics and metrics of the benchmark suite against hand-computed values, scipy (the reference
every hand-written test is compared with, on random data) and the paper's cells."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import random
import statistics

import numpy as np
import pytest
from scipy import special
from scipy import stats as scipy_stats

from bench.suite.metrics import (
    CellRecord,
    gap_probe_correlation,
    paired_comparison,
    paper_cells,
    summarize,
    summarize_all,
)
from bench.suite.stats import (
    betainc,
    cluster_bootstrap_diff,
    mean,
    paired_t,
    pearson,
    quantile,
    sd,
    signed_rank_counts,
    spread,
    student_t_cdf,
    student_t_two_sided_p,
    wilcoxon,
)
from tests.conftest import AURA_RELEASE

PAPER_CELLS = AURA_RELEASE / "rq_intent_v2_multiseed_AB.json"


# --------------------------------------------------------------------------- basics and the t CDF


def test_mean_and_sd_match_statistics_module() -> None:
    xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]
    assert mean(xs) == 5.0
    assert sd(xs) == pytest.approx(statistics.stdev(xs), rel=1e-15)


def test_a_single_run_has_a_mean_and_no_spread() -> None:
    one = spread([0.147])
    assert (one.mean, one.sd, one.n) == (0.147, None, 1)
    assert one.format(scale=100) == "14.7 (n=1)"  # never a made-up "± 0.0"
    four = spread([1.0, 2.0, 3.0, 4.0])
    assert four.mean == 2.5 and four.sd == pytest.approx(math.sqrt(5 / 3))
    assert four.format() == "2.5 ± 1.3"
    with pytest.raises(ValueError):
        spread([])


# --------------------------------------------------------------------------- against scipy

SEEDS = range(6)


def _pairs(seed: int, n: int, shift: float = 0.3) -> tuple[list[float], list[float]]:
    rng = random.Random(seed)
    a = [rng.gauss(0.0, 1.0) for _ in range(n)]
    return a, [x - shift + rng.gauss(0.0, 0.8) for x in a]


@pytest.mark.parametrize("seed", SEEDS)
def test_mean_sd_and_quantile_match_scipy_and_numpy(seed: int) -> None:
    xs, _ = _pairs(seed, 5 + 7 * seed)
    assert mean(xs) == pytest.approx(float(np.mean(xs)), rel=1e-12, abs=1e-15)
    assert sd(xs) == pytest.approx(float(scipy_stats.tstd(xs)), rel=1e-12)
    for q in (0.0, 0.025, 0.1, 0.5, 0.9, 0.975, 1.0):
        assert quantile(xs, q) == pytest.approx(float(np.quantile(xs, q)), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("seed", SEEDS)
def test_betainc_and_t_distribution_match_scipy(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(20):
        a, b, x = rng.uniform(0.1, 40.0), rng.uniform(0.1, 40.0), rng.random()
        assert betainc(a, b, x) == pytest.approx(float(special.betainc(a, b, x)), rel=1e-9, abs=1e-13)
        t, df = rng.uniform(-8.0, 8.0), rng.choice([1, 2, 3, 5, 9, 29, 120, 2000])
        reference = 2.0 * float(scipy_stats.t.sf(abs(t), df))
        assert student_t_two_sided_p(t, df) == pytest.approx(reference, rel=1e-9, abs=1e-14)
        assert student_t_cdf(t, df) == pytest.approx(float(scipy_stats.t.cdf(t, df)), rel=1e-9, abs=1e-14)


@pytest.mark.parametrize("seed", SEEDS)
def test_paired_t_matches_scipy(seed: int) -> None:
    a, b = _pairs(seed, 4 + 9 * seed)
    ours, ref = paired_t(a, b), scipy_stats.ttest_rel(a, b)
    assert ours.statistic == pytest.approx(float(ref.statistic), rel=1e-10)
    assert ours.p == pytest.approx(float(ref.pvalue), rel=1e-8, abs=1e-14)
    assert ours.df == int(ref.df)


@pytest.mark.parametrize("seed", SEEDS)
def test_wilcoxon_exact_matches_scipy(seed: int) -> None:
    a, b = _pairs(seed, 6 + 3 * seed)  # continuous values: no ties, no zeros, n <= 25: exact
    ours, ref = wilcoxon(a, b), scipy_stats.wilcoxon(a, b, method="exact")
    assert ours.method == "exact"
    assert ours.statistic == float(ref.statistic)
    assert ours.p == pytest.approx(float(ref.pvalue), rel=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_wilcoxon_with_ties_and_zeros_matches_scipys_normal_approximation(seed: int) -> None:
    rng = random.Random(seed)
    n = 30 + 10 * seed
    a = [float(rng.randint(0, 4)) for _ in range(n)]
    b = [float(rng.randint(0, 4)) for _ in range(n)]  # judge-like scores: many ties and zeros
    ours = wilcoxon(a, b)
    ref = scipy_stats.wilcoxon(a, b, zero_method="wilcox", correction=True, method="approx")
    assert ours.method == "normal"
    assert ours.statistic == float(ref.statistic)
    assert ours.p == pytest.approx(float(ref.pvalue), rel=1e-9)


@pytest.mark.parametrize("seed", SEEDS)
def test_pearson_matches_scipy(seed: int) -> None:
    x, y = _pairs(seed, 3 + 8 * seed)
    ours, ref = pearson(x, y), scipy_stats.pearsonr(x, y)
    assert ours.statistic == pytest.approx(float(ref.statistic), rel=1e-12, abs=1e-15)
    assert ours.p == pytest.approx(float(ref.pvalue), rel=1e-8, abs=1e-14)


@pytest.mark.parametrize("seed", range(3))
def test_cluster_bootstrap_with_one_cell_per_cluster_matches_scipys_percentile_ci(seed: int) -> None:
    a, b = _pairs(seed, 60)
    ours = cluster_bootstrap_diff(a, b, list(range(len(a))), n_boot=4000, seed=seed)
    diffs = np.array(a) - np.array(b)
    ref = scipy_stats.bootstrap(
        (diffs,), np.mean, n_resamples=4000, method="percentile", rng=np.random.default_rng(seed)
    )
    width = ref.confidence_interval.high - ref.confidence_interval.low
    # Two Monte Carlo estimates of the same interval: equal up to resampling noise.
    assert ours.low == pytest.approx(ref.confidence_interval.low, abs=0.05 * width)
    assert ours.high == pytest.approx(ref.confidence_interval.high, abs=0.05 * width)
    assert ours.statistic == pytest.approx(float(diffs.mean()), rel=1e-12)


def test_betainc_closed_forms() -> None:
    # I_x(a, 1) = x^a and I_x(1, b) = 1 - (1 - x)^b
    assert betainc(3.0, 1.0, 0.4) == pytest.approx(0.4**3, rel=1e-12)
    assert betainc(1.0, 2.5, 0.7) == pytest.approx(1 - 0.3**2.5, rel=1e-12)
    assert betainc(2.0, 3.0, 0.0) == 0.0
    assert betainc(2.0, 3.0, 1.0) == 1.0


@pytest.mark.parametrize("t", [0.1, 0.5, 1.0, 3.0, 12.7])
def test_t_two_sided_p_exact_for_df_1_and_2(t: float) -> None:
    # df=1 is Cauchy: p = 1 - 2 atan(|t|) / pi; df=2: p = 1 - |t| / sqrt(t^2 + 2).
    assert student_t_two_sided_p(t, 1) == pytest.approx(1 - 2 * math.atan(t) / math.pi, rel=1e-12)
    assert student_t_two_sided_p(-t, 2) == pytest.approx(1 - t / math.sqrt(t * t + 2), rel=1e-12)


def test_t_known_quantiles() -> None:
    assert student_t_two_sided_p(2.262, 9) == pytest.approx(0.05, abs=2e-4)  # table t_{0.975, 9}
    assert student_t_two_sided_p(12.706, 1) == pytest.approx(0.05, abs=1e-4)
    assert student_t_two_sided_p(2.576, 1e6) == pytest.approx(0.01, abs=1e-4)
    assert student_t_two_sided_p(1.96, 1e6) == pytest.approx(0.05, abs=1e-4)
    assert student_t_two_sided_p(0.0, 7) == 1.0
    assert student_t_cdf(2.262, 9) == pytest.approx(0.975, abs=1e-4)
    assert student_t_cdf(-2.262, 9) == pytest.approx(0.025, abs=1e-4)


# --------------------------------------------------------------------------- paired t


def test_paired_t_against_hand_computation() -> None:
    a = [12.1, 14.3, 11.8, 15.0, 13.2, 12.9, 14.8, 13.5]
    b = [11.0, 13.9, 12.0, 13.1, 12.4, 12.0, 13.3, 13.6]
    d = [x - y for x, y in zip(a, b, strict=True)]
    t = statistics.fmean(d) / (statistics.stdev(d) / math.sqrt(len(d)))
    res = paired_t(a, b)
    assert res.n == 8 and res.df == 7
    assert res.statistic == pytest.approx(t, rel=1e-12)
    assert res.mean_diff == pytest.approx(statistics.fmean(d), rel=1e-12)
    assert res.p == pytest.approx(student_t_two_sided_p(t, 7), rel=1e-12)
    assert 0.001 < res.p < 0.05  # t ~ 3.2 with 7 df


def test_paired_t_textbook_example() -> None:
    # Differences 1..5 shifted: d = [1, 2, 3, 4, 5] -> mean 3, sd sqrt(2.5), t = 3 / (sqrt(2.5)/sqrt(5))
    res = paired_t([1.0, 2.0, 3.0, 4.0, 5.0], [0.0] * 5)
    assert res.statistic == pytest.approx(3 / math.sqrt(0.5), rel=1e-12)
    assert res.p == pytest.approx(0.0132, abs=2e-4)  # t = 4.243, df = 4


# --------------------------------------------------------------------------- Wilcoxon


def _brute_force_exact_p(diffs: list[float]) -> float:
    """Two-sided exact p by enumerating every sign assignment of the ranks (no ties)."""
    ranks = {abs(d): i + 1 for i, d in enumerate(sorted(diffs, key=abs))}
    w_plus = sum(ranks[abs(d)] for d in diffs if d > 0)
    total = len(diffs) * (len(diffs) + 1) / 2
    stat = min(w_plus, total - w_plus)
    n = len(diffs)
    hits = 0
    for signs in itertools.product((0, 1), repeat=n):
        w = sum(r for r, s in zip(range(1, n + 1), signs, strict=True) if s)
        if min(w, total - w) <= stat:
            hits += 1
    return hits / (1 << n)


def test_signed_rank_counts_small() -> None:
    # n=3: subsets of {1,2,3} by sum: 0:{} 1:{1} 2:{2} 3:{3},{1,2} 4:{1,3} 5:{2,3} 6:{1,2,3}
    assert signed_rank_counts(3) == [1, 1, 1, 2, 1, 1, 1]
    assert sum(signed_rank_counts(12)) == 2**12


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_wilcoxon_exact_matches_brute_force(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(5, 12)
    a = [rng.uniform(0, 10) for _ in range(n)]
    b = [x - rng.uniform(-1.0, 3.0) for x in a]
    res = wilcoxon(a, b)
    assert res.method == "exact" and res.n == n
    assert res.p == pytest.approx(_brute_force_exact_p([x - y for x, y in zip(a, b, strict=True)]), rel=1e-12)
    assert res.w_plus + res.w_minus == n * (n + 1) / 2


def test_wilcoxon_table_values_and_zero_dropping() -> None:
    # All 7 differences positive: p = 2 / 2^7 = 0.015625 (the one-sided table value 1/128, doubled).
    res = wilcoxon([1, 2, 3, 4, 5, 6, 7, 8, 9], [0, 0, 0, 0, 0, 0, 0, 8, 9])
    assert (res.n, res.n_zero, res.statistic) == (7, 2, 0.0)
    assert res.p == 2 / 128
    # Critical value for n=10 at two-sided 0.05 is W=8: P(W<=8) <= 0.025 < P(W<=9).
    counts = signed_rank_counts(10)
    assert sum(counts[:9]) / 2**10 <= 0.025 < sum(counts[:10]) / 2**10


def test_wilcoxon_ties_use_normal_approximation_with_tie_correction() -> None:
    d = [1.0, 1.0, 2.0, 3.0, 3.0, 3.0, -2.0, 4.0]
    res = wilcoxon(d, [0.0] * len(d))
    assert res.method == "normal" and res.n == 8
    # Hand computation: |d| ranks: 1,1 -> 1.5; 2,2 -> 3.5; 3,3,3 -> 6; 4 -> 8.
    w_plus = 1.5 + 1.5 + 3.5 + 6 + 6 + 6 + 8
    assert res.w_plus == w_plus and res.w_minus == 3.5
    n = 8
    var = n * (n + 1) * (2 * n + 1) / 24 - ((2**3 - 2) * 2 + (3**3 - 3)) / 48
    z = (w_plus - n * (n + 1) / 4 - 0.5) / math.sqrt(var)
    assert res.z == pytest.approx(z, rel=1e-12)
    assert res.p == pytest.approx(math.erfc(z / math.sqrt(2)), rel=1e-12)


def test_wilcoxon_large_n_normal_approximation() -> None:
    d = [float(i) if i % 3 else -float(i) for i in range(1, 31)]  # n = 30, no ties
    res = wilcoxon(d, [0.0] * 30)
    assert res.method == "normal"
    w_plus = sum(i for i in range(1, 31) if i % 3)
    z = (w_plus - 30 * 31 / 4 - 0.5) / math.sqrt(30 * 31 * 61 / 24)
    assert res.p == pytest.approx(math.erfc(abs(z) / math.sqrt(2)), rel=1e-12)


def test_wilcoxon_all_zero() -> None:
    res = wilcoxon([1.0, 2.0], [1.0, 2.0])
    assert (res.n, res.n_zero, res.p) == (0, 2, 1.0)


# --------------------------------------------------------------------------- Pearson


def test_pearson_hand_computed() -> None:
    x = [1.0, 2.0, 3.0, 4.0, 5.0]
    y = [2.0, 4.0, 5.0, 4.0, 5.0]
    # sxy = 6, sxx = 10, syy = 6 -> r = 6 / sqrt(60)
    r = 6 / math.sqrt(60)
    res = pearson(x, y)
    assert res.statistic == pytest.approx(r, rel=1e-12)
    assert res.df == 3
    t = r * math.sqrt(3 / (1 - r * r))
    assert res.p == pytest.approx(student_t_two_sided_p(t, 3), rel=1e-12)
    assert res.p == pytest.approx(0.1240, abs=5e-4)  # r = 0.7746, n = 5


def test_pearson_df2_closed_form_and_perfect_line() -> None:
    x, y = [1.0, 2.0, 3.0, 4.0], [1.0, 3.0, 2.0, 5.0]
    res = pearson(x, y)
    r = res.statistic
    t = r * math.sqrt(2 / (1 - r * r))
    assert res.p == pytest.approx(1 - t / math.sqrt(t * t + 2), rel=1e-12)
    assert pearson([1.0, 2.0, 3.0], [2.0, 4.0, 6.0]).p == 0.0


# --------------------------------------------------------------------------- bootstrap


def _synthetic(seed: int) -> tuple[list[float], list[float], list[int]]:
    rng = random.Random(seed)
    a, b, ids = [], [], []
    for q in range(40):
        difficulty = rng.gauss(0, 1)
        for _ in range(3):
            base = difficulty + rng.gauss(0, 0.3)
            a.append(base + 0.5 + rng.gauss(0, 0.3))
            b.append(base)
            ids.append(q)
    return a, b, ids


def test_cluster_bootstrap_is_seeded_and_covers_true_difference() -> None:
    a, b, ids = _synthetic(7)
    r1 = cluster_bootstrap_diff(a, b, ids, n_boot=1000, seed=11)
    r2 = cluster_bootstrap_diff(a, b, ids, n_boot=1000, seed=11)
    r3 = cluster_bootstrap_diff(a, b, ids, n_boot=1000, seed=12)
    assert r1 == r2
    assert (r1.low, r1.high) != (r3.low, r3.high)
    assert r1.n == 40 and r1.n_cells == 120
    assert r1.low < 0.5 < r1.high
    assert r1.low < r1.statistic < r1.high
    assert r1.statistic == pytest.approx(statistics.fmean(x - y for x, y in zip(a, b, strict=True)))
    assert r1.p < 0.01


def test_cluster_bootstrap_does_not_touch_global_random() -> None:
    random.seed(5)
    expected = random.random()
    random.seed(5)
    a, b, ids = _synthetic(1)
    cluster_bootstrap_diff(a, b, ids, n_boot=50, seed=3)
    assert random.random() == expected


# --------------------------------------------------------------------------- metrics


def _tiny_cells() -> list[CellRecord]:
    # query, precision, completeness, probes, latency, tokens, disclosure, correct, contradicted,
    # unverifiable, gap: three cells of condition A
    rows = [
        (1, 1.0, 0.5, 2, 1.0, 100, 2.0, 3, 0, 1, 0.8),
        (2, 0.5, 1.0, 0, 3.0, 50, 0.0, 1, 1, 0, 0.1),
        (3, 0.0, 0.0, 1, 8.0, 30, 1.0, 0, 0, 2, 0.5),
    ]
    cells = [
        CellRecord(
            query_id=q,
            seed=42,
            condition="A",
            scores={"precision": p, "completeness": c},
            probes=probes,
            latency=latency,
            tokens=tokens,
            disclosure=disclosure,
            correct=correct,
            contradicted=contradicted,
            unverifiable=unverifiable,
            gap=gap,
        )
        for q, p, c, probes, latency, tokens, disclosure, correct, contradicted, unverifiable, gap in rows
    ]
    # The first cell also fell back once and called a forbidden tool.
    cells[0] = dataclasses.replace(cells[0], fallbacks=1, forbidden_violations=("memory.recent",))
    return [
        *cells,
        CellRecord(query_id=1, seed=42, condition="B", scores={"precision": 0.2, "completeness": 0.0}),
    ]


def test_summarize_tiny_cells() -> None:
    s = summarize(_tiny_cells(), "A")
    assert (s.n_cells, s.n_queries) == (3, 3)
    assert s.fa == pytest.approx(((0.7 + 0.15) + (0.35 + 0.3) + 0.0) / 3)
    assert s.strict_precision == pytest.approx((1.0 + 0.5) / 2)  # cell 3 has no correct/contradicted
    assert s.recall == pytest.approx((3 / 4 + 1 / 2 + 0 / 2) / 3)
    assert s.hallucination_pct == pytest.approx(100 / 3)
    assert s.perfect_pct == pytest.approx(100 / 3)
    assert s.violation_pct == pytest.approx(100 / 3)
    assert s.probes_per_query == 1.0
    assert s.disclosure == 1.0
    assert (s.latency_median, s.latency_mean) == (3.0, 4.0)
    assert s.tokens_mean == 60.0 and s.fallbacks == 1
    assert s.mean_scores["precision"] == 0.5
    assert set(summarize_all(_tiny_cells())) == {"A", "B"}
    # Dicts with CellRecord field names are accepted too.
    as_dicts = [{"query_id": 9, "seed": 1, "condition": "C", "scores": {"x": 2.0}, "latency": 1.0}]
    assert summarize(as_dicts, "C").mean_scores == {"x": 2.0}


def test_gap_probe_correlation_tiny() -> None:
    res = gap_probe_correlation(_tiny_cells(), "A")
    assert res.n == 3
    assert res.statistic == pytest.approx(pearson([0.8, 0.1, 0.5], [2.0, 0.0, 1.0]).statistic)


def test_paired_comparison_levels() -> None:
    cells = []
    for q in range(6):
        for seed in (42, 123, 456):
            cells.append(CellRecord(q, seed, "x", scores={"s": q + 1.0 + seed / 1000}))
            cells.append(CellRecord(q, seed, "y", scores={"s": float(q)}))
    by_query = paired_comparison(cells, "x", "y", score="s", level="query", n_boot=200, seed=1)
    by_cell = paired_comparison(cells, "x", "y", score="s", level="query_seed", n_boot=200, seed=1)
    assert by_query.n == 6 and by_cell.n == 18
    assert by_query.mean_diff == pytest.approx(1 + (42 + 123 + 456) / 3000)
    assert by_cell.mean_diff == pytest.approx(by_query.mean_diff)
    assert by_cell.bootstrap.n == 6  # clusters are query ids at both levels
    assert by_cell.wilcoxon.p < by_query.wilcoxon.p  # more units, all positive


# --------------------------------------------------------------------------- the paper's cells


@pytest.mark.aura_release
def test_paper_cells_reproduce_per_condition_means() -> None:
    raw = json.loads(PAPER_CELLS.read_text(encoding="utf-8"))
    cells = paper_cells(PAPER_CELLS)
    assert len(cells) == sum(len(v) for by_cond in raw["per_seed"].values() for v in by_cond.values())
    summaries = summarize_all(cells)
    assert list(summaries) == raw["meta"]["conditions"]
    for condition, summary in summaries.items():
        records = [r for by_cond in raw["per_seed"].values() for r in by_cond[condition]]
        implicit = [r["implicit_score"] for r in records]
        literal = [r["literal_score"] for r in records]
        probes = [r["probes"] for r in records]
        # fsum is correctly rounded, so these are exact; the plain sum agrees to rounding.
        assert summary.mean_scores["implicit_score"] == math.fsum(implicit) / len(implicit)
        assert summary.mean_scores["literal_score"] == math.fsum(literal) / len(literal)
        assert summary.probes_per_query == math.fsum(probes) / len(probes)
        assert summary.mean_scores["implicit_score"] == pytest.approx(
            sum(implicit) / len(implicit), abs=1e-12
        )
        assert summary.probes_per_query == sum(probes) / len(probes)  # integers: plain sum is exact
        assert summary.n_cells == 150 and summary.n_queries == 50
        print(
            f"{condition:>14}: implicit={summary.mean_scores['implicit_score']:.4f} "
            f"literal={summary.mean_scores['literal_score']:.4f} probes/q={summary.probes_per_query:.4f} "
            f"latency median={summary.latency_median:.2f} mean={summary.latency_mean:.2f} "
            f"violations={summary.violation_pct:.1f}%"
        )
    cmp = paired_comparison(cells, "tom", "no_intent", score="implicit_score", level="query", seed=0)
    print(
        f"tom vs no_intent (query level, n={cmp.n}): diff={cmp.mean_diff:.4f} "
        f"t={cmp.t_test.statistic:.3f} p={cmp.t_test.p:.4g} wilcoxon p={cmp.wilcoxon.p:.4g} "
        f"CI=[{cmp.bootstrap.low:.4f}, {cmp.bootstrap.high:.4f}]"
    )
    corr = gap_probe_correlation(cells, "tom")
    print(f"tom gap-probes Pearson r={corr.statistic:.3f} p={corr.p:.3g} n={corr.n}")
    assert corr.n == 150
