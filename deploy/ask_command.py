"""``auratown ask``: one question to the AURA environment agent, embedded or on a running daemon."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from deploy.commands import UserError, open_bus

if TYPE_CHECKING:
    from messages.aura import AnswerData, AskQuery


def _query(args: argparse.Namespace) -> AskQuery:
    from messages.aura import AskQuery

    return AskQuery(
        query=args.query,
        asker=args.asker,
        condition=args.condition,
        explore_max_steps=args.max_steps,
        registry=args.registry,
        model=args.model,
        read_only=not args.remember,
    )


def ask(args: argparse.Namespace) -> int:
    if not args.query.strip():
        raise UserError("the query is empty: ask a question, e.g. auratown ask 'Where is Lin Wei?'")
    remote = bool(args.redis) and not args.redis.startswith("memory:")
    answer = _ask_daemon(args) if remote else _ask_embedded(args)
    if args.json:
        print(json.dumps(answer.model_dump(mode="json"), indent=2))
    else:
        print(render(answer))
    return 0


def _ask_embedded(args: argparse.Namespace) -> AnswerData:
    """The town in this process at tick ``--tick``, the registry in process, the pipeline direct."""
    from actors.aura import make_backend_factory
    from actors.town import load_town
    from world import Town, TownDefinitionError
    from world.aura import RegistryProbes, answer_query, scene_view
    from world.probes import agent_state_registry, environment_registry, scene_from_town

    try:
        definition = load_town(args.town)
    except TownDefinitionError as exc:
        raise UserError(str(exc)) from None
    profile = definition.find_agent(args.asker)
    if profile is None:
        names = ", ".join(a.name for a in definition.agents)
        raise UserError(f"no agent named {args.asker!r} in {definition.name}: choose from {names}")
    town = Town(definition, seed=args.seed)
    town.step(args.tick)
    scene = scene_from_town(definition, town.state, town.mind_states, asker=profile.name)
    registry = agent_state_registry() if args.registry == "agent_state" else environment_registry()
    view = scene_view(scene, profile.name, args.query)
    probes = RegistryProbes(registry, scene, f"env:{profile.name}", asker=profile.name)
    backend = make_backend_factory(
        args.model,
        api_base=args.api_base,
        cache_dir=args.cache_dir,
        timeout=args.llm_timeout,
        budget=args.model_budget,
        settings=args.settings,
    )(None)
    return answer_query(
        args.query, profile.name, args.condition, view, probes, backend, explore_max_steps=args.max_steps
    )


def _ask_daemon(args: argparse.Namespace) -> AnswerData:
    from actors.bus import AskTimeoutError, RemoteError, UnexpectedReplyError
    from messages.aura import AnswerData
    from messages.town import Rejected

    with open_bus(args.redis, args.namespace) as bus:
        try:
            return bus.ask("env", _query(args), expect=AnswerData, timeout=args.timeout)
        except AskTimeoutError:
            raise UserError(
                f"no answer from env within {args.timeout:g}s: is `auratown daemon` running for "
                f"namespace {args.namespace!r} with the env and registry roles?"
            ) from None
        except RemoteError as exc:
            raise UserError(str(exc)) from None
        except UnexpectedReplyError as exc:
            raise UserError(exc.reply.reason if isinstance(exc.reply, Rejected) else str(exc)) from None


def render(answer: AnswerData) -> str:
    lines = [answer.text, ""]
    f = answer.frame
    if f is not None:
        lines.append(
            f"IntentFrame ({f.backend}{', fallback: ' + f.fallback if f.fallback else ''}): gap {f.gap:.2f}, "
            f"budget {answer.budget}, alert {'yes' if f.alert else 'no'}, confidence {f.confidence:.2f}"
        )
        lines.append(f"  literal: {f.literal_need}")
        for need in f.implicit_needs:
            lines.append(f"  implicit: {need}")
        if f.recommended_probes:
            lines.append(f"  probes: {', '.join(f.recommended_probes)}")
        if f.rationale:
            lines.append(f"  why: {f.rationale}")
    lines.append(f"Probe trace ({len(answer.trace)}):" if answer.trace else "Probe trace: none")
    for s in answer.trace:
        args = ", ".join(f"{k}={v!r}" for k, v in s.args.items())
        body = json.dumps(s.result, ensure_ascii=False) if s.result is not None else (s.error or "")
        lines.append(f"  {s.step}. {s.tool}({args}) -> {s.status}: {body[:200]}")
    for alert in answer.alerts:
        lines.append(f"Alert: {alert}")
    u = answer.usage
    lines.append(
        f"Usage: {answer.backend}, condition {answer.condition}, model calls {u.model_calls}, "
        f"cache hits {u.cache_hits}, tokens {u.prompt_tokens}+{u.completion_tokens}, ${u.cost_usd:.4f}"
        + (f", answered by the model: {', '.join(u.answered)}" if u.answered else "")
        + (f", fallbacks: {'; '.join(u.fallbacks)}" if u.fallbacks else "")
    )
    lines.extend(f"Diagnostic: {d}" for d in answer.diagnostics)
    return "\n".join(lines)
