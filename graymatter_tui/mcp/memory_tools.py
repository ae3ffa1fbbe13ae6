"""The tools' work against the store: each reads its arguments, does one store operation
and returns a Reply. Store refusals become ToolErrors with the store's own wording."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from graymatter_tui.errors import InvalidInput
from graymatter_tui.mcp.arguments import MAX_QUERIES, Arguments
from graymatter_tui.mcp.errors import ToolError
from graymatter_tui.mcp.replies import Reply, add_reply, batch_reply, search_reply
from graymatter_tui.recall import check_query, rank, recall
from graymatter_tui.store import MemoryStore


@dataclass(frozen=True)
class Session:
    """What a call may use beyond its arguments: the store, and the server's options."""

    store: MemoryStore
    read_only: bool = False
    default_agent: str | None = None


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


def _found(session: Session, agent: str, query: str, top_k: int) -> list[str]:
    # A search records the access of what it returns; a read-only server records nothing.
    search = rank if session.read_only else recall
    return [hit.fact.text for hit in search(session.store, agent, query, k=top_k)]


def memory_search(session: Session, args: Arguments) -> Reply:
    agent = _agent(session, args, "agent_id")
    query = _query(args, "query")
    top_k = args.top_k()
    args.flag("explain")
    return search_reply(agent, query, _found(session, agent, query, top_k))


def memory_search_batch(session: Session, args: Arguments) -> Reply:
    agent = _agent(session, args, "agent_id")
    queries = args.strings("queries", max_items=MAX_QUERIES)
    top_k = args.top_k()
    checked = [_query(args, f"queries[{i}]", q) for i, q in enumerate(queries)]
    return batch_reply(agent, [(q, _found(session, agent, q, top_k)) for q in checked])


def memory_add(session: Session, args: Arguments) -> Reply:
    agent = _agent(session, args, "agent_id")
    text = args.text("text")
    assert text is not None
    _writable(session, "memory_add")
    session.store.put(agent, text)
    return add_reply(agent)


HANDLERS: Mapping[str, Handler] = {
    "memory_search": memory_search,
    "memory_search_batch": memory_search_batch,
    "memory_add": memory_add,
}
