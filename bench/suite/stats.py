"""The benchmarks' statistics, in one place: the standard library's ``statistics`` for mean and
deviation, and the tests it lacks (paired t, Wilcoxon signed-rank, Pearson's p, a cluster
bootstrap) written out, since the project does not depend on scipy at run time; the tests compare
every one with scipy.

Everything here is deterministic: the only randomness (the bootstrap) comes from a
``random.Random(seed)`` built inside the function, never from the global generator.
Means are ``statistics.fmean`` (a ``math.fsum`` over the values: correctly rounded and
independent of summation order), which lets the reproduction check compare the paper's
per-condition means with ``==``.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

__all__ = [
    "BootstrapResult",
    "PearsonResult",
    "Spread",
    "TTestResult",
    "WilcoxonResult",
    "betainc",
    "cluster_bootstrap_diff",
    "mean",
    "normal_cdf",
    "paired_t",
    "pearson",
    "quantile",
    "sd",
    "signed_rank_counts",
    "spread",
    "student_t_cdf",
    "student_t_two_sided_p",
    "wilcoxon",
]

# Exact enumeration of the signed-rank distribution is cheap (O(n^3) integer DP) but the brief fixes
# the cut-off where the normal approximation takes over, matching common practice (scipy uses 50).
WILCOXON_EXACT_MAX_N = 25


def mean(xs: Sequence[float]) -> float:
    """Arithmetic mean (``statistics.fmean``: correctly rounded sum, order independent); a
    ``ValueError`` for no values."""
    if not xs:
        raise ValueError("mean of an empty sequence")
    return statistics.fmean(xs)


def sd(xs: Sequence[float]) -> float:
    """Sample standard deviation (n - 1 denominator, ``statistics.stdev``); a ``ValueError`` for
    fewer than two values: one value has no spread to report."""
    if len(xs) < 2:
        raise ValueError("sd needs at least two values")
    return statistics.stdev(xs)


@dataclass(frozen=True)
class Spread:
    """The mean of repeated runs and, from two runs on, their sample standard deviation."""

    mean: float
    sd: float | None  # None for a single run: no spread was measured
    n: int

    def format(self, scale: float = 1.0, digits: int = 1) -> str:
        """``"14.7 ± 0.3"``; a single run prints its mean alone and says so (``"14.7 (n=1)"``)."""
        shown = f"{scale * self.mean:.{digits}f}"
        return f"{shown} (n=1)" if self.sd is None else f"{shown} ± {scale * self.sd:.{digits}f}"


def spread(xs: Sequence[float]) -> Spread:
    """Mean and sample deviation of ``xs`` (at least one value)."""
    return Spread(mean(xs), sd(xs) if len(xs) > 1 else None, len(xs))


def quantile(xs: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (Hyndman-Fan type 7, numpy's default)."""
    if not xs:
        raise ValueError("quantile of an empty sequence")
    if not 0.0 <= q <= 1.0:
        raise ValueError("q must be in [0, 1]")
    s = sorted(xs)
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


# --------------------------------------------------------------------------- distributions

_CF_MAX_ITER = 20_000  # large a (df ~ 1e6) needs O(sqrt(a)) iterations
_CF_EPS = 1e-15
_CF_TINY = 1e-300


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction for the incomplete beta function (modified Lentz, Numerical Recipes 6.4)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    if abs(d) < _CF_TINY:
        d = _CF_TINY
    d = 1.0 / d
    h = d
    for m in range(1, _CF_MAX_ITER + 1):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = _CF_TINY if abs(d) < _CF_TINY else d
        c = 1.0 + aa / c
        c = _CF_TINY if abs(c) < _CF_TINY else c
        d = 1.0 / d
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = _CF_TINY if abs(d) < _CF_TINY else d
        c = 1.0 + aa / c
        c = _CF_TINY if abs(c) < _CF_TINY else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _CF_EPS:
            return h
    raise ArithmeticError(f"betacf did not converge (a={a}, b={b}, x={x})")


def betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta function I_x(a, b)."""
    if a <= 0 or b <= 0:
        raise ValueError("a and b must be positive")
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    front = math.exp(log_front)
    # The continued fraction converges fast only below the mean; use the symmetry otherwise.
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def student_t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` degrees of freedom."""
    if df <= 0:
        raise ValueError("df must be positive")
    if math.isnan(t):
        return math.nan
    if math.isinf(t):
        return 0.0
    return min(1.0, betainc(df / 2.0, 0.5, df / (df + t * t)))


def student_t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t."""
    half_tail = student_t_two_sided_p(t, df) / 2.0
    return 1.0 - half_tail if t >= 0 else half_tail


def normal_cdf(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


def _normal_two_sided_p(z: float) -> float:
    return min(1.0, math.erfc(abs(z) / math.sqrt(2.0)))


# --------------------------------------------------------------------------- paired t-test


@dataclass(frozen=True)
class TTestResult:
    statistic: float  # t
    p: float  # two-sided
    n: int  # number of pairs
    df: int
    mean_diff: float  # mean of a - b
    sd_diff: float


def paired_t(a: Sequence[float], b: Sequence[float]) -> TTestResult:
    """Paired two-sided t-test on a - b."""
    if len(a) != len(b):
        raise ValueError("paired_t needs sequences of equal length")
    if len(a) < 2:
        raise ValueError("paired_t needs at least two pairs")
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    n = len(diffs)
    md, s = mean(diffs), sd(diffs)
    # Constant differences leave no variance to test against: t is nan (no difference) or +-inf.
    constant = math.nan if md == 0.0 else math.copysign(math.inf, md)
    t = constant if s == 0.0 else md / (s / math.sqrt(n))
    p = math.nan if math.isnan(t) else student_t_two_sided_p(t, n - 1)
    return TTestResult(statistic=t, p=p, n=n, df=n - 1, mean_diff=md, sd_diff=s)


# --------------------------------------------------------------------------- Wilcoxon signed-rank


@dataclass(frozen=True)
class WilcoxonResult:
    statistic: float  # min(W+, W-), as in scipy's two-sided default
    p: float  # two-sided
    n: int  # non-zero differences actually ranked
    n_zero: int  # zero differences dropped
    w_plus: float
    w_minus: float
    method: str  # "exact" or "normal"
    z: float | None  # normal approximation only


def _average_ranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """Ranks 1..n with ties given their average rank; also the sizes of the tie groups."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    ties: list[int] = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        avg = (i + j) / 2.0 + 1.0
        for k in range(i, j + 1):
            ranks[order[k]] = avg
        ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


def signed_rank_counts(n: int) -> list[int]:
    """counts[s] = number of sign assignments of ranks 1..n whose positive ranks sum to s."""
    counts = [1]
    for r in range(1, n + 1):
        new = [*counts, *([0] * r)]
        for s, c in enumerate(counts):
            new[s + r] += c
        counts = new
    return counts


def wilcoxon(a: Sequence[float], b: Sequence[float]) -> WilcoxonResult:
    """Two-sided Wilcoxon signed-rank test on a - b (zero differences dropped)."""
    if len(a) != len(b):
        raise ValueError("wilcoxon needs sequences of equal length")
    diffs_all = [x - y for x, y in zip(a, b, strict=True)]
    diffs = [d for d in diffs_all if d != 0.0]
    n, n_zero = len(diffs), len(diffs_all) - len(diffs)
    if n == 0:
        return WilcoxonResult(0.0, 1.0, 0, n_zero, 0.0, 0.0, "exact", None)
    ranks, ties = _average_ranks([abs(d) for d in diffs])
    w_plus = math.fsum(r for r, d in zip(ranks, diffs, strict=True) if d > 0)
    w_minus = math.fsum(r for r, d in zip(ranks, diffs, strict=True) if d < 0)
    stat = min(w_plus, w_minus)
    has_ties = any(t > 1 for t in ties)
    if n <= WILCOXON_EXACT_MAX_N and not has_ties:
        # Without ties every rank is an integer, so W is too; P(W <= stat) by symmetry is both tails.
        counts = signed_rank_counts(n)
        tail = sum(counts[: int(stat) + 1])
        p = min(1.0, 2.0 * tail / (1 << n))
        return WilcoxonResult(stat, p, n, n_zero, w_plus, w_minus, "exact", None)
    mu = n * (n + 1) / 4.0
    var = n * (n + 1) * (2 * n + 1) / 24.0 - sum(t**3 - t for t in ties) / 48.0
    if var <= 0.0:
        return WilcoxonResult(stat, 1.0, n, n_zero, w_plus, w_minus, "normal", 0.0)
    dev = w_plus - mu
    # Continuity correction: move half a unit towards the mean (never past it).
    corrected = math.copysign(max(abs(dev) - 0.5, 0.0), dev)
    z = corrected / math.sqrt(var)
    return WilcoxonResult(stat, _normal_two_sided_p(z), n, n_zero, w_plus, w_minus, "normal", z)


# --------------------------------------------------------------------------- cluster bootstrap


@dataclass(frozen=True)
class BootstrapResult:
    statistic: float  # observed mean of a - b over all cells
    p: float  # two-sided bootstrap p: 2 * min(share of resamples <= 0, share >= 0)
    n: int  # number of clusters
    n_cells: int
    low: float
    high: float
    confidence: float
    n_boot: int
    seed: int


def cluster_bootstrap_diff(
    a: Sequence[float],
    b: Sequence[float],
    clusters: Sequence[Hashable],
    *,
    n_boot: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> BootstrapResult:
    """Percentile CI of mean(a - b), resampling whole clusters (query ids) with replacement.

    Cells of one query share its difficulty, so resampling cells would understate the variance;
    resampling query ids keeps each query's seeds together.
    """
    if not len(a) == len(b) == len(clusters):
        raise ValueError("a, b and clusters must have equal length")
    if not a:
        raise ValueError("cluster_bootstrap_diff needs at least one cell")
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be in (0, 1)")
    groups: dict[Hashable, list[float]] = {}
    for x, y, c in zip(a, b, clusters, strict=True):
        groups.setdefault(c, []).append(x - y)
    ids = list(groups)  # insertion order: deterministic for a given input order
    sums = [math.fsum(groups[c]) for c in ids]
    sizes = [len(groups[c]) for c in ids]
    observed = math.fsum(sums) / math.fsum(sizes)
    rng = random.Random(seed)
    k = len(ids)
    boots: list[float] = []
    for _ in range(n_boot):
        picks = [rng.randrange(k) for _ in range(k)]
        boots.append(math.fsum(sums[i] for i in picks) / sum(sizes[i] for i in picks))
    alpha = 1.0 - confidence
    low, high = quantile(boots, alpha / 2.0), quantile(boots, 1.0 - alpha / 2.0)
    below = sum(1 for v in boots if v <= 0.0) / n_boot
    above = sum(1 for v in boots if v >= 0.0) / n_boot
    p = min(1.0, 2.0 * min(below, above))
    return BootstrapResult(observed, p, k, len(a), low, high, confidence, n_boot, seed)


# --------------------------------------------------------------------------- Pearson


@dataclass(frozen=True)
class PearsonResult:
    statistic: float  # r
    p: float  # two-sided, from t = r sqrt(df / (1 - r^2)), df = n - 2
    n: int
    df: int


def pearson(x: Sequence[float], y: Sequence[float]) -> PearsonResult:
    if len(x) != len(y):
        raise ValueError("pearson needs sequences of equal length")
    n = len(x)
    if n < 3:
        raise ValueError("pearson needs at least three pairs")
    mx, my = mean(x), mean(y)
    sxy = math.fsum((u - mx) * (v - my) for u, v in zip(x, y, strict=True))
    sxx = math.fsum((u - mx) ** 2 for u in x)
    syy = math.fsum((v - my) ** 2 for v in y)
    if sxx == 0.0 or syy == 0.0:
        return PearsonResult(math.nan, math.nan, n, n - 2)
    r = max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))
    df = n - 2
    if abs(r) == 1.0:
        return PearsonResult(r, 0.0, n, df)
    t = r * math.sqrt(df / (1.0 - r * r))
    return PearsonResult(r, student_t_two_sided_p(t, df), n, df)
