"""The tools' work against the store: each reads its arguments, does one store operation
and returns a Reply. Store refusals become ToolErrors with the store's own wording."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

from graymatter_tui.core.confidence import Confidence
from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.core.receipts import Lineage, lineage_fields
from graymatter_tui.core.review_modes import HELD_BY_MODE, REFLECT_ACTIONS
from graymatter_tui.core.tokens import tokens
from graymatter_tui.core.words import counted
from graymatter_tui.embedding.query import use_of
from graymatter_tui.mcp.arguments import MAX_QUERIES, Arguments, fact_text
from graymatter_tui.mcp.deferred_accesses import DeferredAccesses
from graymatter_tui.mcp.errors import ToolError
from graymatter_tui.mcp.replies import (
    Reply,
    add_reply,
    alias_reply,
    batch_reply,
    checkpoint_reply,
    checkpoint_saved_reply,
    explained_reply,
    held_add_reply,
    held_reflect_reply,
    no_checkpoint_reply,
    reflect_reply,
    search_reply,
)
from graymatter_tui.recall.explain_fields import signal_fields
from graymatter_tui.recall.ranking import (
    MAX_QUERY_BYTES,
    Hit,
    KeywordScorer,
    RankOptions,
    check_query,
    lineages,
    rank,
    recall,
)
from graymatter_tui.recall.vector_signal import NO_VECTORS, QueryVectors
from graymatter_tui.storage import MemoryStore

MAX_EQUIVALENTS = 32


@dataclass(frozen=True)
class Session:
    """What a call may use beyond its arguments: the store, and the server's options."""

    store: MemoryStore
    read_only: bool = False
    default_agent: str | None = None
    # A long-running server records searches' accesses in the background; without one
    # (a single call in-process) the search records them itself before answering.
    accesses: DeferredAccesses | None = None
    review: str = "none"
    # Recall's vector signal, when the server has an embedder; None ranks on keywords
    # alone.
    vectors: QueryVectors | None = None
    # Where recall's keyword scores come from: a long-running server keeps a copy of the
    # postings it reads (ADR 0074); None reads the store's index for each query.
    keywords: KeywordScorer | None = None

    def holds(self, action: str) -> bool:
        """Whether `action` is held for review rather than applied."""
        return action in HELD_BY_MODE.get(self.review, frozenset())


Handler = Callable[[Session, Arguments], Reply]


def _agent(session: Session, args: Arguments, *names: str) -> str:
    if session.default_agent is not None and not any(args.raw.get(n) is not None for n in names):
        return session.default_agent
    return args.agent(*names)


def _writable(session: Session, tool: str) -> None:
    if session.read_only:
        raise ToolError(f"{tool} would write, and this server is read-only (--read-only)")


def _query(args: Arguments, name: str, value: str | None = None) -> str:
    query = value if value is not None else args.required_string(name)
    try:
        check_query(query)
    except InvalidInput as exc:  # the store's wording, under the argument's name
        raise ToolError(f"{name}: {exc}") from None
    return query


def widened(
    query: str, aliases: Mapping[str, list[str]], terms: Callable[[str], list[str]] = tokens
) -> str:
    """The query with the equivalents of every alias whose words it holds (memory_alias).
    Words compare as `terms` makes them: the store's own (stemmed) index terms, so an alias
    of "payment" is used for a query about "payments"."""
    words = set(terms(query))
    extra = []
    for term, equivalents in aliases.items():
        needed = set(terms(term))
        if needed and needed <= words:
            extra += equivalents
    return " ".join([query, *extra])


@dataclass(frozen=True)
class ConfidenceAsked:
    """A search's `min_confidence` and `confidence_weight` (none and 0: not asked)."""

    minimum: Confidence | None = None
    weight: float = 0.0

    @classmethod
    def read(cls, args: Arguments) -> ConfidenceAsked:
        return cls(args.confidence("min_confidence"), args.confidence_weight())


def _hits(
    session: Session,
    agent: str,
    query: str,
    top_k: int,
    asked: ConfidenceAsked = ConfidenceAsked(),
) -> list[Hit]:
    # A search records the access of what it returns; a read-only server records nothing.
    aliases = session.store.aliases(agent)
    if aliases:
        wanted = session.store.read_index(lambda index: widened(query, aliases, index.terms))
    else:
        wanted = query
    if len(wanted.encode("utf-8", "surrogatepass")) > MAX_QUERY_BYTES:
        wanted = query  # the aliases would push it past the query limit: search as asked
    vectors = session.vectors if session.vectors is not None else NO_VECTORS
    options: RankOptions = {
        "k": top_k,
        "vectors": vectors,
        "min_confidence": asked.minimum,
        "confidence_weight": asked.weight,
        "keywords": session.keywords,
    }
    if session.read_only:
        return rank(session.store, agent, wanted, **options)
    if session.accesses is None:
        return recall(session.store, agent, wanted, **options)
    hits = rank(session.store, agent, wanted, **options)
    session.accesses.record(hit.fact.id for hit in hits)
    return hits


def _found(
    session: Session, agent: str, query: str, top_k: int, asked: ConfidenceAsked
) -> list[str]:
    return [hit.fact.text for hit in _hits(session, agent, query, top_k, asked)]


def _explained(hit: Hit, found: Lineage, now: datetime) -> dict[str, object]:
    """Why a fact ranked where it did: each signal's rank and score, the fused score, its
    weight and age, when and by whom it was written, and what it superseded (its
    lineage)."""
    return {
        "fact_id": hit.fact.id,
        "written_at": hit.fact.created_at,
        **signal_fields(hit, now),
        "score": round(hit.score, 6),
        "weight": hit.fact.weight,
        "pinned": hit.fact.pinned,
        "source": hit.fact.source,
        **lineage_fields(found),
    }


def memory_search(session: Session, args: Arguments) -> Reply:
    agent = _agent(session, args, "agent_id")
    query = _query(args, "query")
    top_k = args.top_k()
    explain = args.flag("explain")
    asked = ConfidenceAsked.read(args)
    hits = _hits(session, agent, query, top_k, asked)
    reply = search_reply(agent, query, [hit.fact.text for hit in hits])
    # Whether the vector signal took part, and why not (the embedder failed, no vectors
    # yet): in the structured part only, the text stays upstream's.
    reply.structured["vector"] = use_of(session.vectors).as_json()
    if not explain:
        return reply
    found = lineages(session.store, agent, [hit.fact.id for hit in hits])
    now = session.store.now()
    return explained_reply(reply, [_explained(hit, found[hit.fact.id], now) for hit in hits])


def memory_search_batch(session: Session, args: Arguments) -> Reply:
    agent = _agent(session, args, "agent_id")
    queries = args.strings("queries", max_items=MAX_QUERIES)
    top_k = args.top_k()
    asked = ConfidenceAsked.read(args)
    checked = [_query(args, f"queries[{i}]", q) for i, q in enumerate(queries)]
    return batch_reply(agent, [(q, _found(session, agent, q, top_k, asked)) for q in checked])


def memory_add(session: Session, args: Arguments) -> Reply:
    agent = _agent(session, args, "agent_id")
    text = args.text("text")
    assert text is not None
    confidence = args.confidence()
    _writable(session, "memory_add")
    if session.holds("add"):
        held = session.store.hold_change(agent, "add", "", text, confidence=confidence)
        return held_add_reply(agent, held.id)
    written = session.store.remember(agent, text, confidence=confidence)
    return add_reply(agent, written.held)


def memory_alias(session: Session, args: Arguments) -> Reply:
    agent = _agent(session, args, "agent_id")
    term = args.text("term")
    assert term is not None
    equivalents = args.strings("equivalents", max_items=MAX_EQUIVALENTS)
    for index, equivalent in enumerate(equivalents):
        fact_text(equivalent, f"equivalents[{index}]")
    key = " ".join(tokens(term))
    if not key:
        raise ToolError(f"term {term!r} has no searchable words (only stop-words or symbols)")
    _writable(session, "memory_alias")
    return alias_reply(agent, term, session.store.add_alias(agent, key, equivalents))


def checkpoint_save(session: Session, args: Arguments) -> Reply:
    agent = _agent(session, args, "agent_id")
    state = args.json_object("state")
    _writable(session, "checkpoint_save")
    saved = session.store.save_checkpoint(agent, state)
    return checkpoint_saved_reply(agent, saved.id, saved.created_at)


def checkpoint_resume(session: Session, args: Arguments) -> Reply:
    agent = _agent(session, args, "agent_id")
    on_missing = args.choice("on_missing", ("error", "empty"), default="error")
    found = session.store.latest_checkpoint(agent)
    if found is None:
        if on_missing == "empty":
            return no_checkpoint_reply(agent)
        raise ToolError(
            f'no checkpoint saved for agent "{agent}" (pass on_missing: "empty" to get an '
            "empty result instead of an error)"
        )
    state = json.loads(found.state) if found.state is not None else None
    return checkpoint_reply(agent, found.id, found.created_at, state)


def memory_reflect(session: Session, args: Arguments) -> Reply:
    action = args.choice("action", REFLECT_ACTIONS)
    agent = _agent(session, args, "agent_id", "agent")
    store = session.store
    if action == "link":
        # Upstream's own answer where it has no graph; clients are told to degrade
        # gracefully. Here the graph is built from facts by consolidation's extract stage.
        raise ToolError("knowledge graph not available: links are extracted from facts")
    if action in ("add", "update"):
        text = args.text("text")
        assert text is not None
        confidence = args.confidence()
        if action == "add":
            _writable(session, "memory_reflect")
            if session.holds(action):
                held = store.hold_change(agent, action, "", text, confidence=confidence)
                return held_reflect_reply(action, agent, held.id)
            raised = store.remember(agent, text, confidence=confidence).held
            return reflect_reply(action, agent, "1 fact added", raised)
        target = args.text("target")
        assert target is not None
        _writable(session, "memory_reflect")
        if session.holds(action):
            held = store.hold_change(agent, action, target, text, confidence=confidence)
            return held_reflect_reply(action, agent, held.id)
        _, tombs = store.supersede_text(agent, target, text, confidence=confidence)
        return reflect_reply(action, agent, f"{counted(len(tombs), 'fact')} superseded")
    # forget, pin, unpin: the fact is named in target or text; target wins.
    named = args.text("target", required=False) or args.text("text", required=False)
    if args.raw.get("confidence") is not None:
        raise ToolError(f"confidence is for add and update, not {action}")
    if named is None:
        raise ToolError(f"target (or text) is required for {action}")
    _writable(session, "memory_reflect")
    if session.holds(action):
        return held_reflect_reply(action, agent, store.hold_change(agent, action, named, "").id)
    if action == "forget":
        done = store.retire_text(agent, named)
        return reflect_reply(action, agent, f"{counted(len(done), 'fact')} forgotten")
    done = store.pin_text(agent, named, pinned=action == "pin")
    return reflect_reply(action, agent, f"{counted(len(done), 'fact')} {action}ned")


HANDLERS: Mapping[str, Handler] = {
    "memory_search": memory_search,
    "memory_search_batch": memory_search_batch,
    "memory_add": memory_add,
    "memory_reflect": memory_reflect,
    "memory_alias": memory_alias,
    "checkpoint_save": checkpoint_save,
    "checkpoint_resume": checkpoint_resume,
}
