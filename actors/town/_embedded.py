"""A town in this process, as one object: the front of the Python API for an embedded town."""

from __future__ import annotations

from types import TracebackType

from actors.aura import BackendFactory, make_backend_factory, reader_from_setting
from actors.bus import Bus, MemoryTransport
from actors.roles.env import ENV
from actors.runtime import Host
from actors.town._client import STEP_WAIT, TownClient
from actors.town._config import TownConfig, ensure_config
from actors.town._definitions import embedded_town
from actors.town._launch import spawn_town
from messages.aura import AnswerData, AskQuery, Condition
from messages.town import ClockStatus, EventAccepted, InjectEvent, TownStateView
from world import MindFactory, TownDefinition, schedule_mind
from world.conversation import DialogueWriter


class EmbeddedTown:
    """AURATown's clock, world, town agents, probe registry and AURA environment agent, hosted in
    this process on the memory bus (what ``auratown run`` hosts), behind calls that wait.

    The town runs from construction until ``close()`` (or the end of a ``with`` block). It starts
    paused: it moves only when ``step`` is called, and ``step`` returns once its ticks ran.
    """

    def __init__(
        self,
        definition: TownDefinition | None = None,
        *,
        seed: int = 0,
        reader: str | None = None,
        backends: BackendFactory | None = None,
        mind_factory: MindFactory = schedule_mind,
        dialogue: DialogueWriter | None = None,
        timeout: float = 60.0,
        step_timeout: float = STEP_WAIT,
        namespace: str = "town:embedded",
    ) -> None:
        """``definition``: the town (None: AURATown, ``embedded_town()``); ``seed``: its seed.
        ``reader``: the offline IntentInferrer's social reader for ``ask`` (``cues``, ``embedding``
        or ``auto``; None: ``$AURATOWN_INTENT_READER``, else ``auto``), unless ``backends`` says
        how queries are answered (``actors.aura.make_backend_factory``, e.g. with a model).
        ``mind_factory``/``dialogue``: the agents' minds and the world's conversations
        (``actors.town.llm_mind_factory`` gives both). ``timeout``: seconds an ask (state,
        question) may take; ``step_timeout``: seconds ``step`` waits for its ticks by default."""
        if backends is None and reader is not None:
            backends = make_backend_factory(reader=reader_from_setting(reader))
        self.timeout = timeout
        self.step_timeout = step_timeout
        self.bus = Bus(MemoryTransport(), namespace)
        proposed = TownConfig(
            definition=definition or embedded_town(), seed=seed, start_paused=True, ticks_per_second=0.0
        )
        self.config, _ = ensure_config(self.bus, proposed)
        self.host = Host(self.bus, name="embedded-town")
        try:
            spawn_town(
                self.host, self.config, mind_factory=mind_factory, backends=backends, dialogue=dialogue
            )
            self.host.start()
        except BaseException:
            self.bus.close()
            raise
        self.client = TownClient(self.bus, timeout=timeout)

    def step(self, ticks: int = 1, *, timeout: float | None = None) -> ClockStatus:
        """Run ``ticks`` more ticks (30 simulated minutes each) and return once the last of them
        completed: the clock's status then (``completed`` is that tick). ``StepTimeoutError``
        if they did not within ``timeout`` seconds (default: ``step_timeout``)."""
        self.client.step(ticks, wait=self.step_timeout if timeout is None else timeout)
        return self.client.status()

    def state(self, agent: str | None = None, *, private: bool = False, events: int = 10) -> TownStateView:
        """Everyone's public state (and with ``private``, private state and beliefs), or one
        ``agent``'s; the last ``events`` events of the log."""
        return self.client.state(agent, private=private, events=events)

    def inject(self, event: InjectEvent) -> EventAccepted:
        """An event at a location (or town-wide): agents there perceive it on the next tick."""
        return self.client.inject(event)

    def ask(
        self, query: str, *, asker: str, condition: Condition = "aura_intent", remember: bool = False
    ) -> AnswerData:
        """The AURA environment agent's answer to ``asker``'s question about the town as it is
        now, with the backends the town was made with (``TownRequestError`` with the reason if it
        refuses, e.g. an unknown asker). ``remember``: the exchange enters the asker's memory on
        the next tick."""
        msg = AskQuery(query=query, asker=asker, condition=condition, read_only=not remember)
        return self.client.ask(ENV, msg, AnswerData)

    def close(self) -> None:
        """Stop every actor of the town and close its bus (idempotent)."""
        if self.bus.closed:
            return
        try:
            self.host.stop()
        finally:
            self.bus.close()
            self.bus.transport.close()

    def __enter__(self) -> EmbeddedTown:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()
