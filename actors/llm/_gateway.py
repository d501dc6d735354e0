"""The gateway every model call goes through: stage settings, retries, repair, cache, accounting.

litellm is imported on the first call, never at import: it takes seconds to import and the CLI
must start fast. Nothing is set globally in litellm apart from silencing its stdout banner; the
endpoint, key and timeout travel with each call, and litellm's own retries are off (we retry
transient failures ourselves, so attempts are counted and never multiplied).
"""

from __future__ import annotations

import importlib
import os
import re
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import structlog

from actors.llm._budget import Budget
from actors.llm._cache import ResponseCache, cache_key
from actors.llm._config import GatewayConfig
from actors.llm._context import trim_messages
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

    from actors.llm._connection import Connection

T = TypeVar("T", bound="BaseModel")
Messages = list[dict[str, str]]

log = structlog.get_logger("auratown.llm")

_REQUEST_THREADS: weakref.WeakSet[threading.Thread] = weakref.WeakSet()
"""Every request thread still alive (``finish_requests``)."""

DEADLINE_GRACE = 0.5
"""Seconds past a request's deadline before the gateway stops waiting for the provider's client
(which enforces the same timeout itself, but per read: a server that trickles bytes evades it)."""

MIN_REQUEST_S = 0.05
"""A request is not started with less time than this left in its budget."""

CONTEXT_SLACK = 0.1
"""Share of the context window left free: tokens are counted with litellm's tokenizer for the
model, which for a local model is a stand-in for the server's own (and its chat template adds a
few tokens per message)."""

_REFUSED_SCHEMA = re.compile(r"response_format|json_schema|json schema|schema|grammar", re.IGNORECASE)
"""A provider's 400 about the structured-output request itself: retried once without it."""

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
        self._lock = threading.Lock()
        self._window: int | None = None
        self._window_known = False
        self._schema_supported: bool | None = None
        self._schema_refusals = 0
        """Forms of ``response_format`` the provider refused: this gateway sends the next one."""

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
        """The model's text answer; raises LLMError (reason "empty" for a blank answer,
        "scaffolding" for one carrying chat-template or prompt text: never returned).
        ``fresh``: ask the model even if the cache has an answer (a retry of an answer that could
        not be read); the new answer replaces the cached one. ``budget``: the unit of work's, which
        this stage's own budget (``GatewayConfig.stage_limits``) draws from. ``prose``: the stage
        expects prose; an answer that is JSON (or a code block) gets one repair call, then
        LLMError("invalid_text"), and is never returned as the answer."""
        settings = settings or self.config.settings_for(stage)
        key = self._key(stage, settings, messages, None)  # a cached answer that is not prose is not used
        hit = None if fresh else self._cached(stage, actor, key, prose=prose)
        if hit is not None:
            return hit[0]
        load_litellm()  # imported (seconds, the first time) before any budget's clock starts
        stage_budget = self._stage_budget(budget)
        answer = self._request(stage, settings, messages, actor, stage_budget)
        if not answer.text.strip():
            raise self._failed(stage, actor, "empty", "the model returned no text", answer)
        self._refuse_scaffolding(stage, actor, answer, answer.text, messages)
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
                raise self._failed(
                    stage, actor, "invalid_text", "after one repair the answer is still not prose", second
                )
            self._refuse_scaffolding(stage, actor, second, second.text, messages)
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

        Where the provider supports it, the request carries ``schema`` as a JSON Schema
        ``response_format`` (the server constrains its decoding to it); a provider that refuses
        it gets the request again without it, and this gateway stops sending it. The prompt
        should ask for JSON in words too (``schema_prompt(schema)``): the answer may wrap the
        object in code fences or prose. An answer that does not validate gets one repair call
        showing the model its error; if that fails too, LLMError("empty" | "invalid_json" |
        "invalid_schema") is raised, never a default value; a value whose text carries
        scaffolding raises LLMError("scaffolding"). ``budget``: as for ``complete``.
        """
        settings = settings or self.config.settings_for(stage)
        key = self._key(stage, settings, messages, schema)
        hit = self._cached(stage, actor, key, schema)
        if hit is not None:
            completion, value, repaired = hit
            assert value is not None
            return Structured(value, completion, repaired)

        load_litellm()  # imported (seconds, the first time) before any budget's clock starts
        # Room for the response_format forms a provider may still refuse (each costs a request).
        refusable = (2 - self._schema_refusals) if self._supports_schema() else 0
        stage_budget = self._stage_budget(budget, extra_calls=max(0, refusable))
        first = self._schema_request(
            stage, settings=settings, messages=messages, schema=schema, actor=actor, budget=stage_budget
        )
        parsed = _parse(first.text, schema)
        if parsed.value is not None:
            self._refuse_scaffolding(stage, actor, first, parsed.value, messages)
            self._store(key, first, repaired=False)
            return Structured(parsed.value, first, repaired=False)

        log.info("llm.repair", stage=str(stage), actor=actor, reason=parsed.reason, problem=parsed.problem)
        self.usage.add(stage, actor, UsageStats(repairs=1))
        shown = [{"role": "assistant", "content": first.text}] if first.text.strip() else []
        repair = [*messages, *shown, {"role": "user", "content": repair_prompt(schema, parsed.problem)}]
        both = self._follow_up(
            stage,
            settings,
            repair,
            actor,
            budget=stage_budget,
            first=first,
            response_format=self._response_format(schema)[1],
        )
        reparsed = _parse(both.text, schema)
        if reparsed.value is None:
            raise self._failed(stage, actor, reparsed.reason, f"after one repair: {reparsed.problem}", both)
        self._refuse_scaffolding(stage, actor, both, reparsed.value, messages)
        self._store(key, both, repaired=True)
        return Structured(reparsed.value, both, repaired=True)

    def _schema_request(
        self,
        stage: Stage,
        *,
        settings: StageSettings,
        messages: Messages,
        schema: type[BaseModel],
        actor: str,
        budget: Budget,
    ) -> Completion:
        """The first request of a structured stage: with the schema as ``response_format`` where
        the provider takes it. A provider that refuses the form sent is asked again with the next
        one (``_response_format``), and this gateway remembers it."""
        spent: Completion | None = None
        while True:
            level, fmt = self._response_format(schema)
            try:
                if spent is None:
                    return self._request(
                        stage, settings, messages, actor, budget, response_format=fmt, final=False
                    )
                return self._follow_up(
                    stage,
                    settings,
                    messages,
                    actor,
                    budget=budget,
                    first=spent,
                    response_format=fmt,
                    final=False,
                )
            except LLMError as exc:
                if fmt is None or exc.reason != "http_error" or not _REFUSED_SCHEMA.search(exc.detail):
                    self.usage.add(stage, actor, UsageStats(failures=1))
                    raise
                with self._lock:
                    self._schema_refusals = max(self._schema_refusals, level + 1)
                log.warning(
                    "llm.response_format_refused",
                    stage=str(stage),
                    actor=actor,
                    form=fmt["type"],
                    cause=exc.detail,
                )
                spent = _spent(exc, self.config.model)  # the refused requests' attempts and tokens

    def _response_format(self, schema: type[BaseModel]) -> tuple[int, dict[str, Any] | None]:
        """(level, ``response_format``) for ``schema``: the standard JSON Schema form (0); on an
        OpenAI-compatible server that refused it, the ``json_object`` form with a ``schema``
        (1: what llama-cpp-python's server takes, and llama.cpp's); else none (instructions and
        repair only)."""
        level = self._schema_refusals
        if not self._supports_schema():
            return level, None
        if level == 0:
            name = re.sub(r"[^A-Za-z0-9_-]", "_", schema.__name__)[:64] or "answer"
            # strict: False: OpenAI's strict mode rejects schemas with defaults and open objects,
            # which pydantic models have; the schema still guides (or constrains) decoding.
            json_schema = {"name": name, "schema": schema.model_json_schema(), "strict": False}
            return level, {"type": "json_schema", "json_schema": json_schema}
        if level == 1 and self._openai_compatible():
            return level, {"type": "json_object", "schema": schema.model_json_schema()}
        return level, None

    def _supports_schema(self) -> bool:
        with self._lock:
            if self._schema_supported is None:
                self._schema_supported = self._schema_support()
            return self._schema_supported

    def _schema_support(self) -> bool:
        cfg = self.config
        if cfg.structured_output is not None:
            return cfg.structured_output
        if self._openai_compatible():
            return True  # llama.cpp's server, vLLM, Ollama and LM Studio honour json_schema
        try:
            return bool(load_litellm().supports_response_schema(model=cfg.model))
        except Exception:  # noqa: BLE001 - a model litellm does not know: instructions and repair
            return False

    def _openai_compatible(self) -> bool:
        """A self-hosted OpenAI-compatible server: ``openai/<name>`` at an ``api_base``."""
        if self.config.api_base is None:
            return False
        try:
            provider = load_litellm().get_llm_provider(self.config.model, api_base=self.config.api_base)[1]
        except Exception:  # noqa: BLE001 - a model string litellm cannot route
            return False
        return bool(provider == "openai")

    def _refuse_scaffolding(
        self, stage: Stage, actor: str, answer: Completion, value: object, messages: Messages
    ) -> None:
        """LLMError("scaffolding") when the answer's text (every string of a structured value)
        carries chat-template or prompt scaffolding: such text is never an answer. No repair: a
        model that lost its prompt format is no likelier to find it when shown its echo, and on
        a small local model the second call costs as long as the first."""
        from world.scaffolding import has_scaffolding  # world's package loads pydantic: on first use

        # The system messages and the request opening the conversation (a stage's templated
        # prompt); later turns are chat, which an answer may rightly quote.
        prompts = [m.get("content") or "" for m in messages if m.get("role") == "system"]
        prompts += [m.get("content") or "" for m in messages if m.get("role") == "user"][:1]
        for text in _strings(value):
            marker = has_scaffolding(text, prompts)
            if marker is not None:
                log.warning("llm.scaffolding", stage=str(stage), actor=actor, marker=marker)
                raise self._failed(stage, actor, "scaffolding", f"the answer carries {marker!r}", answer)

    def _failed(
        self, stage: Stage, actor: str, reason: ErrorReason, detail: str, spent: Completion
    ) -> LLMError:
        """A gateway call that got answers but no usable one: counted, and the error to raise
        (with the answers' tokens, so the caller's fallback counts them)."""
        self.usage.add(stage, actor, UsageStats(failures=1))
        return LLMError(
            stage,
            reason,
            detail,
            spent.attempts,
            prompt_tokens=spent.prompt_tokens,
            completion_tokens=spent.completion_tokens,
        )

    def _stage_budget(self, unit: Budget | None, extra_calls: int = 0) -> Budget:
        """``extra_calls``: requests a provider may refuse at once (a response_format it does not
        take), on top of the stage's retries and repair."""
        seconds, calls = self.config.stage_limits()
        calls += extra_calls
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
        response_format: dict[str, Any] | None = None,
        final: bool = True,
    ) -> Completion:
        """The call after ``first``: its answer with both calls' tokens, cost, latency and
        attempts; a call that fails raises with the attempts and tokens of both."""
        try:
            second = self._request(
                stage, settings, messages, actor, budget, response_format=response_format, final=final
            )
        except LLMError as exc:
            raise LLMError(
                exc.stage,
                exc.reason,
                exc.detail,
                first.attempts + exc.attempts,
                prompt_tokens=first.prompt_tokens + exc.prompt_tokens,
                completion_tokens=first.completion_tokens + exc.completion_tokens,
            ) from exc
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

    # -- context -----------------------------------------------------------------------------

    def context_window(self) -> int | None:
        """Tokens of prompt and answer the model takes: ``GatewayConfig.context_window``, else
        litellm's model info (its input limit), else None (not known: nothing is trimmed)."""
        if self.config.context_window is not None:
            return self.config.context_window
        with self._lock:
            if not self._window_known:
                self._window = _model_window(load_litellm(), self.config.model)
                self._window_known = True
            return self._window

    def count_tokens(self, messages: Messages) -> int:
        """The prompt's tokens by litellm's tokenizer for the model (a stand-in for an unknown
        one); 0 if it cannot count."""
        try:
            return int(load_litellm().token_counter(model=self.config.model, messages=messages))
        except Exception:  # noqa: BLE001 - counting is best effort; the provider has the last word
            return 0

    def _fit(self, stage: Stage, actor: str, messages: Messages, max_tokens: int) -> tuple[Messages, int]:
        """``messages`` and the output cap, trimmed to the context window (recorded when they
        are: the usage counter ``trimmed`` and an ``llm.trimmed`` event)."""
        window = self.context_window()
        if window is None:
            return messages, max_tokens
        max_tokens = max(1, min(max_tokens, window // 2))  # a cap as large as the window leaves no room
        room = int(window * (1 - CONTEXT_SLACK)) - max_tokens
        before = self.count_tokens(messages)
        if before <= room:
            return messages, max_tokens
        trimmed = trim_messages(messages, room, self.count_tokens)
        kept = {
            "prompt_tokens": [before, self.count_tokens(trimmed)],
            "messages": [len(messages), len(trimmed)],
        }
        log.warning(
            "llm.trimmed", stage=str(stage), actor=actor, window=window, max_tokens=max_tokens, **kept
        )
        self.usage.add(stage, actor, UsageStats(trimmed=1))
        return trimmed, max_tokens

    # -- model calls -------------------------------------------------------------------------

    def _request(
        self,
        stage: Stage,
        settings: StageSettings,
        messages: Messages,
        actor: str,
        budget: Budget,
        *,
        response_format: dict[str, Any] | None = None,
        final: bool = True,
    ) -> Completion:
        """One answer from the model, retrying transient failures with exponential backoff, each
        request cut to its deadline and all of them to ``budget``. Every request carries the
        stage's output cap and its deadline, the prompt fitted to the context window. A request
        that failed counts its prompt's tokens (the provider sent no usage), 0 completion.
        ``final``: an error is the gateway call's failure (else the caller tries again)."""
        litellm = load_litellm()
        cap = self.config.max_tokens_for(stage, settings)
        messages, cap = self._fit(stage, actor, messages, cap)
        kwargs = self._call_kwargs(settings, messages, cap, response_format)
        latency = 0.0
        attempts = 0
        failed_sent = 0  # requests sent that got no answer: their prompt tokens are counted here
        prompt_tokens = _Lazy(lambda: self.count_tokens(messages))
        while True:
            if budget.remaining() < MIN_REQUEST_S or not budget.take_call():
                detail = f"no time or request left ({budget.describe()} per stage)"
                spent = failed_sent * prompt_tokens.get() if failed_sent else 0
                raise self._unanswered(
                    stage, actor, ("budget", detail), attempts, latency, spent, final=final
                )
            attempts += 1
            deadline = min(self.config.timeout, budget.remaining())
            started = time.monotonic()
            try:
                response = self._send(litellm, {**kwargs, "timeout": deadline}, deadline)
            # litellm maps provider errors onto openai's exception types, but whatever else a
            # provider integration raises must still end as a typed, counted LLMError.
            except Exception as exc:
                latency += time.monotonic() - started
                failed_sent += 1
                reason, transient, detail = classify(exc)
                # A server refusing the response_format (llama-cpp-python: a 500) refuses it again.
                transient = transient and not (response_format and _REFUSED_SCHEMA.search(detail))
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
                spent = failed_sent * prompt_tokens.get()
                raise self._unanswered(
                    stage, actor, (reason, detail), attempts, latency, spent, final=final
                ) from exc
            latency += time.monotonic() - started
            break
        answer = self._completion(litellm, response, latency, attempts)
        if failed_sent:
            answer = replace(answer, prompt_tokens=answer.prompt_tokens + failed_sent * prompt_tokens.get())
        elif answer.prompt_tokens == 0:  # a provider that reports no usage: the prompt, counted
            answer = replace(answer, prompt_tokens=prompt_tokens.get())
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

    def _unanswered(  # noqa: PLR0917 - the one place a request loop's failure is counted
        self,
        stage: Stage,
        actor: str,
        why: tuple[ErrorReason, str],
        attempts: int,
        latency: float,
        prompt_tokens: int,
        *,
        final: bool,
    ) -> LLMError:
        """Requests that got no answer: counted (their prompts' tokens included), and the error."""
        usage = UsageStats(
            calls=attempts,
            retries=max(0, attempts - 1),
            latency_s=latency,
            failures=int(final),
            prompt_tokens=prompt_tokens,
        )
        self.usage.add(stage, actor, usage)
        return LLMError(stage, why[0], why[1], attempts, prompt_tokens=prompt_tokens)

    def _send(self, litellm: Any, kwargs: dict[str, Any], deadline: float) -> Any:
        """One request, given up on at its deadline. On an OpenAI-compatible server: its own
        connection, shut when given up on, and the answer streamed, so the server stops
        generating for nobody (llama.cpp's server stops when the client leaves; llama-cpp-python's
        only notices between the chunks of a streamed answer)."""
        connection = self._connection(deadline) if self._openai_compatible() else None
        if connection is not None:
            kwargs = {
                **kwargs,
                "client": connection.client,
                "stream": True,
                "stream_options": {"include_usage": True},
            }
        response = _call_with_deadline(litellm, kwargs, deadline, connection)
        if connection is not None and connection.cut_short:
            # litellm made up an ending for a stream the server cut short: the answer is a part.
            raise ConnectionError("the server ended the stream before the answer's end (cut short)")
        return response

    def _connection(self, timeout: float) -> Connection:
        from actors.llm._connection import Connection  # httpx and openai: loaded with litellm

        assert self.config.api_base is not None
        # A local server takes any key; a hosted one refuses a missing key as it refuses a wrong one.
        key = self.config.api_key or os.environ.get("OPENAI_API_KEY") or "no-key"
        return Connection(base_url=self.config.api_base, api_key=key, timeout=timeout)

    def _call_kwargs(
        self,
        settings: StageSettings,
        messages: Messages,
        max_tokens: int,
        response_format: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        cfg = self.config
        kwargs: dict[str, Any] = {
            "model": cfg.model,
            "messages": messages,
            "temperature": settings.temperature,
            "max_tokens": max_tokens,
            "timeout": cfg.timeout,
            "num_retries": 0,  # we retry, and count, ourselves
            "drop_params": True,  # a provider that rejects e.g. seed still answers
        }
        if response_format is not None:
            kwargs["response_format"] = response_format
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

    def _key(
        self, stage: Stage, settings: StageSettings, messages: Messages, schema: type[BaseModel] | None
    ) -> str | None:
        if self.cache is None:
            return None
        # The request's settings as sent: the output cap in force (global, call's or stage's).
        settings = StageSettings(settings.temperature, self.config.max_tokens_for(stage, settings))
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
        from world.scaffolding import has_scaffolding

        if has_scaffolding(entry["text"]) is not None:  # cached before the gateway refused such text
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


def _call_with_deadline(
    litellm: Any, kwargs: dict[str, Any], seconds: float, connection: Connection | None = None
) -> Any:
    """``litellm.completion(**kwargs)``, given up on ``DEADLINE_GRACE`` after ``seconds`` (as a
    TimeoutError, a transient failure). With a ``connection`` (the request's own client), giving
    up shuts its sockets: the server sees the client leave and stops generating, and the thread
    ends at once. Without one (a hosted provider's client) the call goes on in its daemon thread
    until the client's own timeout ends it, but nobody waits for it."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            response = litellm.completion(**kwargs)
            if kwargs.get("stream"):
                response = _assembled(litellm, response, kwargs["messages"])
            box["response"] = response
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread as is
            box["error"] = exc
        finally:
            done.set()
            if connection is not None:
                connection.close()

    thread = threading.Thread(target=run, name="llm-request", daemon=True)
    _REQUEST_THREADS.add(thread)
    thread.start()
    if not done.wait(max(0.0, seconds) + DEADLINE_GRACE):
        if connection is not None:
            connection.abandon()
        raise TimeoutError(f"the model did not answer within its {seconds:.3g}s deadline")
    if "error" in box:
        raise box["error"]
    return box["response"]


def finish_requests(timeout: float) -> int:
    """Wait up to ``timeout`` seconds for the requests given up on to end; how many are still
    running. A process about to exit calls it: a request thread ending while the interpreter shuts
    down (in an import, after its connection was shut) can leave a module lock held, and litellm's
    finalizers then wait on it forever."""
    deadline = time.monotonic() + timeout
    for thread in list(_REQUEST_THREADS):
        thread.join(max(0.0, deadline - time.monotonic()))
    return sum(1 for t in list(_REQUEST_THREADS) if t.is_alive())


def _assembled(litellm: Any, stream: Any, messages: Messages) -> Any:
    """A streamed answer as one response (its usage from the stream's last chunk, else counted)."""
    chunks = list(stream)
    # Nothing sent at all (litellm makes up a closing chunk even for an empty body): as an empty
    # body without streaming, a transient failure, retried.
    if not any(getattr(c, "usage", None) or any(ch.delta.content for ch in c.choices) for c in chunks):
        raise ConnectionError("the server ended the stream without an answer")
    return litellm.stream_chunk_builder(chunks, messages=messages)


class _Lazy:
    """A value computed on first use (counting a prompt's tokens costs a tokenizer pass)."""

    def __init__(self, compute: Callable[[], int]) -> None:
        self._compute = compute
        self._value: int | None = None

    def get(self) -> int:
        if self._value is None:
            self._value = self._compute()
        return self._value


def _spent(exc: LLMError, model: str) -> Completion:
    """What a failed call cost, as a (textless) completion a follow-up call adds its own to."""
    return Completion("", model, exc.prompt_tokens, exc.completion_tokens, 0.0, 0.0, False, exc.attempts)


def _strings(value: object) -> list[str]:
    """Every string in an answer: the text itself, or each string field of a structured value."""
    if isinstance(value, str):
        return [value]
    dump = getattr(value, "model_dump", None)
    data = dump() if callable(dump) else value
    out: list[str] = []
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(item)
    return out


def _model_window(litellm: Any, model: str) -> int | None:
    """The model's input limit by litellm's model info; None for a model it does not know."""
    try:
        info = litellm.get_model_info(model)
    except Exception:  # noqa: BLE001 - litellm raises for models its map lacks
        return None
    for key in ("max_input_tokens", "max_tokens"):
        value = info.get(key)
        if isinstance(value, int) and value > 0:
            return value
    return None
