"""The gateway every model call goes through: stage settings, retries, repair, cache, accounting.

litellm is imported on the first call, never at import: it takes seconds to import and the CLI
must start fast. Nothing is set globally in litellm apart from silencing its stdout banner; the
endpoint, key and timeout travel with each call, and litellm's own retries are off (we retry
transient failures ourselves, so attempts are counted and never multiplied).
"""

from __future__ import annotations

import importlib
import os
import threading
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import structlog

from actors.llm._budget import Budget
from actors.llm._cache import ResponseCache, cache_key
from actors.llm._config import GatewayConfig
from actors.llm._errors import ErrorReason, LLMError, classify
from actors.llm._json import (
    NoJSONError,
    extract_json,
    looks_structured,
    prose_repair_prompt,
    repair_prompt,
)
from actors.llm._stages import Stage, StageSettings
from actors.llm._usage import UsageLedger, UsageStats

if TYPE_CHECKING:
    from pydantic import BaseModel

T = TypeVar("T", bound="BaseModel")
Messages = list[dict[str, str]]

log = structlog.get_logger("auratown.llm")

DEADLINE_GRACE = 0.5
"""Seconds past a request's deadline before the gateway stops waiting for the provider's client
(which enforces the same timeout itself, but per read: a server that trickles bytes evades it)."""

MIN_REQUEST_S = 0.05
"""A request is not started with less time than this left in its budget."""

_import_lock = threading.Lock()
_litellm_module: Any = None


def load_litellm() -> Any:
    """litellm, imported once per process, offline: the one place that sets it up (every import of
    it in the project goes through here)."""
    global _litellm_module
    with _import_lock:
        if _litellm_module is None:
            # Offline and reproducible: use the cost map shipped with litellm, not a download.
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            module: Any = importlib.import_module("litellm")
            # Otherwise every failed call prints a "Give Feedback / Get Help" banner on stdout,
            # which would corrupt the CLI's --json output (litellm's own Router does the same).
            module.suppress_debug_info = True
            _litellm_module = module
        return _litellm_module


@dataclass(frozen=True)
class Completion:
    text: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    """0 for a cached answer (it cost nothing this time) and for models litellm does not price."""
    latency_s: float
    cached: bool
    attempts: int
    """Requests sent for this answer (retries and a repair call included); 0 when cached."""


@dataclass(frozen=True)
class Structured(Generic[T]):
    value: T
    completion: Completion
    """The answer that validated; when repaired, tokens, cost, latency and attempts cover both calls."""
    repaired: bool


@dataclass(frozen=True)
class _Parsed(Generic[T]):
    value: T | None
    reason: ErrorReason = "invalid_json"
    problem: str = ""


class LLMGateway:
    """Thread-safe; one per process (or per run) shared by every actor that calls a model."""

    def __init__(self, config: GatewayConfig, cache: ResponseCache | None = None) -> None:
        self.config = config
        self.cache = cache
        self.usage = UsageLedger()

    # -- public API --------------------------------------------------------------------------

    def complete(
        self,
        stage: Stage,
        messages: Messages,
        *,
        actor: str = "",
        settings: StageSettings | None = None,
        fresh: bool = False,
        budget: Budget | None = None,
        prose: bool = False,
    ) -> Completion:
        """The model's text answer; raises LLMError (reason "empty" for a blank answer).
        ``fresh``: ask the model even if the cache has an answer (a retry of an answer that could
        not be read); the new answer replaces the cached one. ``budget``: the unit of work's, which
        this stage's own budget (``GatewayConfig.stage_limits``) draws from. ``prose``: the stage
        expects prose; an answer that is JSON (or a code block) gets one repair call, then
        LLMError("invalid_text"), and is never returned as the answer."""
        settings = settings or self.config.settings_for(stage)
        key = self._key(settings, messages, None)  # a cached answer that is not prose is not used
        hit = None if fresh else self._cached(stage, actor, key, prose=prose)
        if hit is not None:
            return hit[0]
        load_litellm()  # imported (seconds, the first time) before any budget's clock starts
        stage_budget = self._stage_budget(budget)
        answer = self._request(stage, settings, messages, actor, stage_budget)
        if not answer.text.strip():
            self.usage.add(stage, actor, UsageStats(failures=1))
            raise LLMError(stage, "empty", "the model returned no text", answer.attempts)
        if prose and looks_structured(answer.text):
            log.info("llm.repair", stage=str(stage), actor=actor, reason="invalid_text")
            self.usage.add(stage, actor, UsageStats(repairs=1))
            repair = [
                *messages,
                {"role": "assistant", "content": answer.text},
                {"role": "user", "content": prose_repair_prompt()},
            ]
            second = self._follow_up(stage, settings, repair, actor, budget=stage_budget, first=answer)
            if not second.text.strip() or looks_structured(second.text):
                self.usage.add(stage, actor, UsageStats(failures=1))
                raise LLMError(
                    stage, "invalid_text", "after one repair the answer is still not prose", second.attempts
                )
            self._store(key, second, repaired=True)
            return second
        self._store(key, answer, repaired=False)
        return answer

    def structured(
        self,
        stage: Stage,
        messages: Messages,
        schema: type[T],
        *,
        actor: str = "",
        settings: StageSettings | None = None,
        budget: Budget | None = None,
    ) -> Structured[T]:
        """The answer parsed and validated into ``schema``, after at most one repair call.

        The prompt should ask for JSON (``schema_prompt(schema)`` words it); the answer may wrap
        the object in code fences or prose. An answer that does not validate gets one repair
        call showing the model its error; if that fails too, LLMError("empty" | "invalid_json" |
        "invalid_schema") is raised, never a default value. ``budget``: as for ``complete``.
        """
        settings = settings or self.config.settings_for(stage)
        key = self._key(settings, messages, schema)
        hit = self._cached(stage, actor, key, schema)
        if hit is not None:
            completion, value, repaired = hit
            assert value is not None
            return Structured(value, completion, repaired)

        load_litellm()  # imported (seconds, the first time) before any budget's clock starts
        stage_budget = self._stage_budget(budget)
        first = self._request(stage, settings, messages, actor, stage_budget)
        parsed = _parse(first.text, schema)
        if parsed.value is not None:
            self._store(key, first, repaired=False)
            return Structured(parsed.value, first, repaired=False)

        log.info("llm.repair", stage=str(stage), actor=actor, reason=parsed.reason, problem=parsed.problem)
        self.usage.add(stage, actor, UsageStats(repairs=1))
        shown = [{"role": "assistant", "content": first.text}] if first.text.strip() else []
        repair = [*messages, *shown, {"role": "user", "content": repair_prompt(schema, parsed.problem)}]
        both = self._follow_up(stage, settings, repair, actor, budget=stage_budget, first=first)
        second = both
        reparsed = _parse(second.text, schema)
        if reparsed.value is None:
            self.usage.add(stage, actor, UsageStats(failures=1))
            raise LLMError(stage, reparsed.reason, f"after one repair: {reparsed.problem}", both.attempts)
        self._store(key, both, repaired=True)
        return Structured(reparsed.value, both, repaired=True)

    def _stage_budget(self, unit: Budget | None) -> Budget:
        seconds, calls = self.config.stage_limits()
        return unit.child(seconds, calls) if unit is not None else Budget(seconds, calls)

    def _follow_up(
        self,
        stage: Stage,
        settings: StageSettings,
        messages: Messages,
        actor: str,
        *,
        budget: Budget,
        first: Completion,
    ) -> Completion:
        """The repair call after ``first``: its answer with both calls' tokens, cost, latency and
        attempts; a repair call that fails raises with the attempts of both."""
        try:
            second = self._request(stage, settings, messages, actor, budget)
        except LLMError as exc:
            raise LLMError(exc.stage, exc.reason, exc.detail, first.attempts + exc.attempts) from exc
        return replace(
            second,
            prompt_tokens=first.prompt_tokens + second.prompt_tokens,
            completion_tokens=first.completion_tokens + second.completion_tokens,
            cost_usd=first.cost_usd + second.cost_usd,
            latency_s=first.latency_s + second.latency_s,
            attempts=first.attempts + second.attempts,
        )

    def record_fallback(self, stage: Stage, actor: str, reason: str, detail: str = "") -> None:
        """A caller answered with an offline backend instead of the model: counted, never silent;
        ``detail`` (the provider's message) is logged with it."""
        if detail:
            log.warning("llm.fallback", stage=str(stage), actor=actor, reason=reason, cause=detail)
        else:
            log.warning("llm.fallback", stage=str(stage), actor=actor, reason=reason)
        self.usage.add_fallback(stage, actor, reason)

    # -- model calls -------------------------------------------------------------------------

    def _request(
        self, stage: Stage, settings: StageSettings, messages: Messages, actor: str, budget: Budget
    ) -> Completion:
        """One answer from the model, retrying transient failures with exponential backoff, each
        request cut to its deadline and all of them to ``budget``."""
        litellm = load_litellm()
        kwargs = self._call_kwargs(settings, messages)
        latency = 0.0
        attempts = 0
        while True:
            if budget.remaining() < MIN_REQUEST_S or not budget.take_call():
                self.usage.add(
                    stage,
                    actor,
                    UsageStats(calls=attempts, retries=max(0, attempts - 1), latency_s=latency, failures=1),
                )
                raise LLMError(
                    stage, "budget", f"no time or request left ({budget.describe()} per stage)", attempts
                )
            attempts += 1
            deadline = min(self.config.timeout, budget.remaining())
            started = time.monotonic()
            try:
                response = _call_with_deadline(litellm, {**kwargs, "timeout": deadline}, deadline)
            # litellm maps provider errors onto openai's exception types, but whatever else a
            # provider integration raises must still end as a typed, counted LLMError.
            except Exception as exc:
                latency += time.monotonic() - started
                reason, transient, detail = classify(exc)
                delay = self.config.delay_before_retry(attempts)
                # Out of budget for another attempt: the failure is this one's, not the budget's.
                room = budget.remaining() - delay >= MIN_REQUEST_S and budget.calls_left() >= 1
                if transient and attempts <= self.config.max_retries and room:
                    log.warning(
                        "llm.retry",
                        stage=str(stage),
                        actor=actor,
                        reason=reason,
                        attempt=attempts,
                        delay=delay,
                    )
                    time.sleep(delay)
                    continue
                self.usage.add(
                    stage,
                    actor,
                    UsageStats(calls=attempts, retries=attempts - 1, latency_s=latency, failures=1),
                )
                raise LLMError(stage, reason, detail, attempts) from exc
            latency += time.monotonic() - started
            break
        answer = self._completion(litellm, response, latency, attempts)
        self.usage.add(
            stage,
            actor,
            UsageStats(
                calls=attempts,
                retries=attempts - 1,
                prompt_tokens=answer.prompt_tokens,
                completion_tokens=answer.completion_tokens,
                cost_usd=answer.cost_usd,
                latency_s=latency,
            ),
        )
        return answer

    def _call_kwargs(self, settings: StageSettings, messages: Messages) -> dict[str, Any]:
        cfg = self.config
        kwargs: dict[str, Any] = {
            "model": cfg.model,
            "messages": messages,
            "temperature": settings.temperature,
            "timeout": cfg.timeout,
            "num_retries": 0,  # we retry, and count, ourselves
            "drop_params": True,  # a provider that rejects e.g. seed still answers
        }
        if settings.max_tokens is not None:
            kwargs["max_tokens"] = settings.max_tokens
        if cfg.api_base is not None:
            kwargs["api_base"] = cfg.api_base
        if cfg.api_key is not None:
            kwargs["api_key"] = cfg.api_key
        if cfg.seed is not None:
            kwargs["seed"] = cfg.seed
        return kwargs

    def _completion(self, litellm: Any, response: Any, latency: float, attempts: int) -> Completion:
        choices = getattr(response, "choices", None) or []
        message = getattr(choices[0], "message", None) if choices else None
        text = getattr(message, "content", None) or ""
        usage = getattr(response, "usage", None)
        try:
            cost = float(litellm.completion_cost(completion_response=response) or 0.0)
        # The cost map raises for models it does not know (a local server): those cost 0.
        except Exception:  # noqa: BLE001
            cost = 0.0
        return Completion(
            text=text if isinstance(text, str) else str(text),
            model=str(getattr(response, "model", None) or self.config.model),
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            cost_usd=cost,
            latency_s=latency,
            cached=False,
            attempts=attempts,
        )

    # -- cache -------------------------------------------------------------------------------

    def _key(self, settings: StageSettings, messages: Messages, schema: type[BaseModel] | None) -> str | None:
        if self.cache is None:
            return None
        schema_id = None
        if schema is not None:
            schema_id = (f"{schema.__module__}.{schema.__qualname__}", schema.model_json_schema())
        return cache_key(
            model=self.config.model,
            api_base=self.config.api_base,
            settings=settings,
            seed=self.config.seed,
            messages=messages,
            schema=schema_id,
        )

    def _cached(
        self, stage: Stage, actor: str, key: str | None, schema: type[T] | None = None, *, prose: bool = False
    ) -> tuple[Completion, T | None, bool] | None:
        if key is None or self.cache is None:
            return None
        started = time.monotonic()
        try:
            entry = self.cache.get(key)
        # A cache that is down (Redis gone, disk unreadable) costs a model call, not the answer.
        except Exception as exc:  # noqa: BLE001
            log.warning("llm.cache_error", op="get", error=repr(exc))
            return None
        if entry is None or not isinstance(entry.get("text"), str) or not entry["text"].strip():
            return None
        if prose and looks_structured(entry["text"]):
            return None
        value = None
        if schema is not None:
            value = _parse(entry["text"], schema).value
            if value is None:
                return None
        completion = Completion(
            text=entry["text"],
            model=str(entry.get("model") or self.config.model),
            prompt_tokens=int(entry.get("prompt_tokens") or 0),
            completion_tokens=int(entry.get("completion_tokens") or 0),
            cost_usd=0.0,
            latency_s=time.monotonic() - started,
            cached=True,
            attempts=0,
        )
        self.usage.add(stage, actor, UsageStats(cache_hits=1))
        return completion, value, bool(entry.get("repaired"))

    def _store(self, key: str | None, answer: Completion, *, repaired: bool) -> None:
        if key is None or self.cache is None:
            return
        entry = {
            "text": answer.text,
            "model": answer.model,
            "prompt_tokens": answer.prompt_tokens,
            "completion_tokens": answer.completion_tokens,
            "cost_usd": answer.cost_usd,
            "repaired": repaired,
        }
        try:
            self.cache.put(key, entry)
        except Exception as exc:  # noqa: BLE001
            log.warning("llm.cache_error", op="put", error=repr(exc))


def _parse(text: str, schema: type[T]) -> _Parsed[T]:
    from pydantic import ValidationError  # pydantic stays out of `import actors.llm`

    if not text.strip():
        return _Parsed(None, "empty", "the answer was empty")
    try:
        data = extract_json(text)
    except NoJSONError as exc:
        return _Parsed(None, "invalid_json", str(exc))
    try:
        return _Parsed(schema.model_validate(data))
    except ValidationError as exc:
        errors = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}"
            for err in exc.errors(include_url=False)
        )
        return _Parsed(None, "invalid_schema", f"the JSON does not match the schema: {errors}")


def _call_with_deadline(litellm: Any, kwargs: dict[str, Any], seconds: float) -> Any:
    """``litellm.completion(**kwargs)``, given up on ``DEADLINE_GRACE`` after ``seconds`` (as a
    TimeoutError, a transient failure): the call goes on in its daemon thread until the client's
    own timeout ends it, but nobody waits for it."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["response"] = litellm.completion(**kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread as is
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="llm-request", daemon=True).start()
    if not done.wait(max(0.0, seconds) + DEADLINE_GRACE):
        raise TimeoutError(f"the model did not answer within its {seconds:.3g}s deadline")
    if "error" in box:
        raise box["error"]
    return box["response"]
