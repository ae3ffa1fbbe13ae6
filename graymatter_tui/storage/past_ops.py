"""Memory as it was: the facts of a past moment, and what happened to each since, as
functions over one read transaction (`list --as-of`, `recall --as-of`, the TUI's past
view). Built on the endings `lifespan_ops` keeps; see `core.lifespan` for the rules."""

from __future__ import annotations

from graymatter_tui.core import clock
from graymatter_tui.core.errors import Conflict, InvalidInput, NotFound
from graymatter_tui.core.lifespan import AsOf, Ending, Moment, canonical_time, ended_at, later
from graymatter_tui.core.model import Fact, FactState
from graymatter_tui.storage.lifespan_ops import moment_of, rows_of
from graymatter_tui.storage.transaction import Transaction
from graymatter_tui.storage.values import NowState, PastFact, PastFacts, PastState


def resolve(tx: Transaction, as_of: AsOf, agent: str | None) -> tuple[Moment, str | None]:
    """The moment `as_of` names, and the agent to show (a record's own agent when none
    is given). A record of another agent than `agent` is refused."""
    if as_of.time is None:
        record = tx.find_record(as_of.record)
        if record is None:
            raise NotFound(f"no journal record with id {as_of.record}")
        if agent is not None and record.agent_id != agent:
            raise Conflict(
                f"record {record.cycle_id} is of agent {record.agent_id!r}, not {agent!r}"
            )
        return moment_of(record), record.agent_id
    return Moment(clock.format_time(as_of.time)), agent


def past_facts(
    tx: Transaction,
    agent: str | None,
    as_of: AsOf,
    *,
    state: FactState = "live",
    limit: int | None = None,
    before: str | None = None,
    with_facts: bool = True,
) -> PastFacts:
    """The facts of `agent` (every agent's when None) that were in `state` at the moment
    `as_of` names (live, tombstones then, or both), newest first, each with what
    happened to it since. Without `with_facts`, a fact live now is named by id only (a
    long list is drawn from the store a page at a time, recall reads its postings)."""
    moment, shown_agent = resolve(tx, as_of, agent)
    created = tx.meta_get("created_at") or ""
    agents = [shown_agent] if shown_agent is not None else _all_agents(tx)
    found: list[PastFact] = []
    reached = False  # some fact had been written by the moment
    for name in agents:
        spans = rows_of(tx, name)
        # Pruned facts first (the store no longer holds them: their copies are in the
        # journal), so that the store's own facts can be read newest first and the read
        # can stop once `limit` of them are in.
        gone: list[PastFact] = []
        records: dict[str, dict[str, Fact]] = {}
        for fact_id, endings in spans.items():
            copy = _pruned_copy(tx, fact_id, endings, records)
            if copy is None or (before is not None and fact_id >= before):
                continue
            reached = reached or moment.reached(copy.created_at)
            item = _past(copy, endings, moment, state, "pruned")
            if item is not None:
                gone.append(item)
        kept = 0
        at, strictly = moment.at, moment.before
        for fact in tx.iter_facts(name, "all", before=before):
            stamp = fact.created_at  # `moment.reached`, inlined: this runs for every fact
            if len(stamp) != 27 or stamp[10] != "T" or stamp[26] != "Z":
                stamp = canonical_time(stamp)
            if stamp > at or (strictly and stamp == at):
                continue
            reached = True
            span = spans.get(fact.id)
            now: NowState = "live" if fact.is_live else "tombstone"
            if not span:  # never ended: live ever since it was written
                if state == "tombstones":
                    continue
                row = fact if with_facts or now != "live" else None
                item = PastFact(fact.id, row, "live", now, [])
            else:
                past = _past(fact, span, moment, state, now)
                if past is None:
                    continue
                item = past if with_facts else past.without_fact()
            found.append(item)
            kept += 1
            if limit is not None and kept >= limit:
                break
        found += gone
    if not found and not reached and (not created or moment.at < canonical_time(created)):
        since = f"it was created at {_shown(created)}" if created else "it holds nothing yet"
        raise InvalidInput(f"the store did not exist yet {_when(moment)} ({since})")
    found.sort(key=lambda p: p.fact_id, reverse=True)
    if limit is not None:
        found = found[:limit]
    return PastFacts(
        moment=moment,
        agent=shown_agent,
        facts=found,
        derived=not tx.keeps_lifespans,
    )


def _shown(stamp: str) -> str:
    return canonical_time(stamp)[:19].replace("T", " ") + " UTC"


def _when(moment: Moment) -> str:
    shown = _shown(moment.at)
    return f"before record {moment.record} ({shown})" if moment.record else f"at {shown}"


def _all_agents(tx: Transaction) -> list[str]:
    """Agents with facts now, and those whose every fact has been pruned since."""
    names = set(tx.agent_names())
    names.update(owner for owner, _fid, _raw in tx.iter_lifespans(None))
    return sorted(names)


def _past(
    fact: Fact, endings: list[Ending], moment: Moment, state: FactState, now: NowState
) -> PastFact | None:
    if not moment.reached(fact.created_at):
        return None
    ending = ended_at(endings, moment)
    then: PastState = "live" if ending is None else "tombstone"
    if (state == "live" and then != "live") or (state == "tombstones" and then != "tombstone"):
        return None
    after = later(endings, moment)
    return PastFact(
        fact_id=fact.id,
        fact=fact,
        then=then,
        now=now,
        later=after,
        ended=ending,
        approximate=any(e.approximate for e in after) or bool(ending and ending.approximate),
    )


def _pruned_copy(
    tx: Transaction,
    fact_id: str,
    endings: list[Ending],
    records: dict[str, dict[str, Fact]],
) -> Fact | None:
    """A pruned fact, by its copy in the journal record that pruned it (`records`: the
    copies of each record read so far)."""
    last = endings[-1] if endings else None
    if last is None or last.how != "pruned" or not last.record:
        return None
    if last.record not in records:
        record = tx.find_record(last.record)
        records[last.record] = {f.id: f for f in record.pruned} if record is not None else {}
    return records[last.record].get(fact_id)
