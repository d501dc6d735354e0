"""What a query is about, read off its structure: the people it names, the place, whether it asks
about a group, and, in a question about one person's view of another, who holds the view.

Structure only: closed classes of English (quantifiers, perspective frames), never the wording
of a subcategory. What the query *means* is a ``SocialReader``'s job (``_intent``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from world.aura._types import SceneView

# Quantifiers and collective nouns: a question with one of these and no person is about a group.
_GROUP = re.compile(
    r"\b(any(one|body)|every(one|body)|some(one|body)|no ?one|nobody|people|folks?|residents|"
    r"townsfolk|neighbou?rs|others|the (group|crowd|gang|lot|room|regulars)|crowd|who(?:'s| is| are|se)?|"
    r"vibe|atmosphere|mood (in|at|around|of)|feel of|both of them|all of them|they all)\b",
    re.IGNORECASE,
)
# Where the asker is: "here", "around me", "this place".
_HERE = re.compile(r"\b(here|around me|near me|with me|this place|in this room|nearby)\b", re.IGNORECASE)
# Frames that put the next name in the holder's seat: "according to X", "in X's eyes".
_HOLDER_BEFORE = re.compile(
    r"\b(according to|as far as|in the eyes of|from the point of view of|if you asked|ask)\s+$", re.IGNORECASE
)
_HOLDER_POSSESSIVE = re.compile(
    r"^'s?\s+(eyes|view|opinion|mind|book|read|take|impression|idea|sense|picture|guess|understanding|"
    r"belief|assumption|expectation|perspective|estimate|version|money|reckoning)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class QueryParse:
    """The referents of a query, in order of mention."""

    people: tuple[str, ...]
    """Agents named (not the asker), in order of mention."""
    place: str | None
    """A place the query names, if any."""
    group: bool
    """The query asks about several people (a quantifier, a collective) rather than one."""
    here: bool
    """The query points at the asker's own place."""
    holder: str | None = None
    """Of two or more people named, the one the query asks the view of (``holder_of``)."""
    masked: str = ""
    """The query with the people named replaced by stand-ins ("Sam", "Alex", ...), so that a reader
    compares what is asked, not who."""

    @property
    def subject(self) -> str | None:
        return self.people[0] if self.people else None


def _name_forms(who: str, known: Sequence[str]) -> list[tuple[str, bool]]:
    """Ways a query may name ``who``: the full name and its first part in any case; any other part
    only capitalised and only when no other agent shares it ("Mei" for Chen Mei)."""
    parts = who.split()
    forms = [(who, False)]
    if len(parts) > 1:
        forms.append((parts[0], False))
        others = {p for k in known if k != who for p in k.split()}
        forms += [(p, True) for p in parts[1:] if p not in others and len(p) > 2]
    return forms


def mentioned_agents(query: str, view: SceneView) -> list[str]:
    """Agents named in the query, in order of mention; not the asker."""
    known = view.known or tuple(a.name for a in view.agents)
    found: list[tuple[int, str]] = []
    for who in known:
        for form, exact_case in _name_forms(who, known):
            flags = 0 if exact_case else re.IGNORECASE
            m = re.search(rf"\b{re.escape(form)}\b", query, flags)
            if m:
                found.append((m.start(), who))
                break
    return [name for _, name in sorted(found) if name != view.asker]


def name_spans(query: str, who: str, view: SceneView) -> list[tuple[int, int]]:
    known = view.known or tuple(a.name for a in view.agents)
    spans: list[tuple[int, int]] = []
    for form, exact_case in _name_forms(who, known):
        flags = 0 if exact_case else re.IGNORECASE
        spans += [(m.start(), m.end()) for m in re.finditer(rf"\b{re.escape(form)}\b", query, flags)]
    return spans


def mentioned_location(query: str, locations: Sequence[str]) -> str | None:
    q = query.lower()
    for loc in sorted(locations, key=len, reverse=True):
        if loc.lower() in q:
            return loc
        short = loc.lower().removeprefix("the ").removeprefix("town ")
        if len(short) > 3 and short in q:
            return loc
        head = short.split()[-1] if " " in short else ""
        # "the garden", "the pharmacy": the head noun alone, when no other place shares it.
        if len(head) > 3 and re.search(rf"\b{re.escape(head)}\b", q):
            sharing = [x for x in locations if x.lower().split()[-1] == head]
            if len(sharing) == 1:
                return loc
    return None


# A named person followed closely by a verb of holding a view: "Chen Mei thinks", "does Liu Yang
# expect", "is Wang Jun under the impression", "would Zhang Hao say".
_VIEW_VERB = re.compile(
    r"^('s)?\s+(\w+\s+){0,2}?(think|thinks|thought|know|knows|knew|believe|believes|reckon|reckons|figure|"
    r"figures|expect|expects|assume|assumes|suppose|supposes|imagine|imagines|guess|guesses|suspect|"
    r"suspects|reali[sz]e|reali[sz]es|aware|under the impression|heard|hear|been told|gather|gathers|"
    r"say|says|said|count on|counting on|picture|pictures|consider|considers|have the idea|has the idea)\b",
    re.IGNORECASE,
)

_VIEW_ANYWHERE = re.compile(
    r"\b(think|know|believe|reckon|figure|expect|assume|suppose|imagine|guess|suspect|reali[sz]e|aware|"
    r"impression|heard|told|gather|say|count on|picture|consider|make of|makes of|sees it|pegged|"
    r"convinced|for granted|picked up)\b",
    re.IGNORECASE,
)
# The person a view is about: "about X", "of X's mood", "that X is", or X's state ("X's mood").
_ABOUT_BEFORE = re.compile(r"\b(about|of|on|that|if|whether)\s+$", re.IGNORECASE)
_ABOUT_AFTER = re.compile(
    r"^'s\s+(?!eyes|view|opinion|mind\b|book|read|take|impression|idea|sense)", re.IGNORECASE
)


def _is_about(query: str, who: str, view: SceneView) -> bool:
    """Whether ``query`` names ``who`` as the one a view is about."""
    return any(
        _ABOUT_BEFORE.search(query[:start]) or _ABOUT_AFTER.match(query[end:])
        for start, end in name_spans(query, who, view)
    )


def holder_of(query: str, people: Sequence[str], view: SceneView) -> str | None:
    """Of two or more people named, the one holding a view about another, if the query asks for
    one: marked by a perspective frame ("according to X", "X's read on"), or the name a verb of
    holding a view follows ("X thinks", "does X expect", "is X under the impression")."""
    if len(people) < 2:
        return None
    for who in people:
        for start, end in name_spans(query, who, view):
            if _HOLDER_BEFORE.search(query[:start]) or _HOLDER_POSSESSIVE.match(query[end:]):
                return who
    for who in people:
        for _start, end in name_spans(query, who, view):
            if _VIEW_VERB.match(query[end:]):
                return who
    if _VIEW_ANYWHERE.search(query):
        # A view is asked for, but the frame is looser ("as X sees it", "X has Y pegged as"): the
        # holder is whoever the view is not about, else the first named. Misreading a plain
        # question this way costs a belief read; misreading the other way would read private state.
        about = [who for who in people if _is_about(query, who, view)]
        if len(about) == 1:
            return next(p for p in people if p != about[0])
        return people[0]
    return None


_NAME_AFTER = re.compile(
    r"\b(?i:where(?:'s| is| was)|who(?:'s| is)|is|was|about|with|find|see|ask|tell|meet|how(?:'s| is))\s+"
    r"([A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)\b"
)
_NOT_NAMES = frozenset(
    {
        "I", "Im", "It", "The", "A", "An", "This", "That", "There", "Here", "Today", "Tonight",
        "Tomorrow", "Now", "Anyone", "Anybody", "Someone", "Somebody", "Everyone", "Everybody",
        "Nobody", "He", "She", "They", "We", "You", "My", "Your", "Our", "Their", "His", "Her",
        "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "January",
        "February", "March", "April", "May", "June", "July", "August", "September", "October",
        "November", "December", "Mr", "Mrs", "Ms", "Dr", "Miss", "Mister", "Doctor", "Professor",
    }
)  # fmt: skip


def unknown_people(query: str, view: SceneView) -> tuple[str, ...]:
    """Names the query asks about that are no one in the town and no place ("Where is Bob?")."""
    known = view.known or tuple(a.name for a in view.agents)
    words = {w.lower() for name in (*known, *view.locations) for w in re.findall(r"[A-Za-z]+", name)}
    found = []
    for match in _NAME_AFTER.finditer(query):
        name = match.group(1)
        parts = name.split()
        if parts[0] in _NOT_NAMES or any(w.lower() in words for w in parts):
            continue
        found.append(name)
    return tuple(dict.fromkeys(found))


def parse_query(query: str, view: SceneView) -> QueryParse:
    people = tuple(mentioned_agents(query, view))
    # Possessives of places ("Chen Mei's Home") name a place, not only a person.
    place = mentioned_location(query, view.locations)
    if place is not None and people:
        owners = [p for p in people if place.lower().startswith(p.lower())]
        if owners and len(people) == 1 and re.search(r"\b(home|house)\b", query, re.IGNORECASE) is None:
            place = None
    group = not people and bool(_GROUP.search(query))
    here = bool(_HERE.search(query))
    holder = holder_of(query, people, view)
    return QueryParse(
        people=people,
        place=place,
        group=group,
        here=here,
        holder=holder,
        masked=mask_people(query, people, view),
    )


STAND_INS = ("Sam", "Alex", "Kim", "Jo", "Max")


def mask_people(query: str, people: Sequence[str], view: SceneView) -> str:
    """``query`` with each person named replaced by a stand-in, in order of mention."""
    spans = sorted(
        (start, end, STAND_INS[min(i, len(STAND_INS) - 1)])
        for i, who in enumerate(people)
        for start, end in name_spans(query, who, view)
    )
    out, last = [], 0
    for start, end, stand_in in spans:
        if start < last:
            continue  # a first name inside a full name already replaced
        out += [query[last:start], stand_in]
        last = end
    return "".join([*out, query[last:]])


def people_at(view: SceneView, place: str | None) -> tuple[str, ...]:
    """The agents in view at ``place`` (everyone in view but the asker when ``place`` is None)."""
    return tuple(
        a.name for a in view.agents if a.name != view.asker and (place is None or a.location == place)
    )
