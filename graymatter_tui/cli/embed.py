"""`embed`: drain the embedding backlog in this process (ADR 0035)."""

from __future__ import annotations

from pathlib import Path

import click

from graymatter_tui.cli.common import common_options, open_store
from graymatter_tui.cli.output import emit_json, one_line, say
from graymatter_tui.cli.params import checked_by, usage_error
from graymatter_tui.cli.progress import stderr_progress
from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.core.textsafe import validate_agent
from graymatter_tui.core.words import counted, counted_pairs


@click.command()
@click.option(
    "--agent",
    "agent_option",
    default=None,
    callback=checked_by(validate_agent),
    help="Only this agent's facts.",
)
@click.argument("agent", required=False)
@common_options
def embed(
    agent_option: str | None, agent: str | None, data_dir: Path | None, as_json: bool
) -> None:
    """Embed every fact (of --agent A, or all) still waiting for a vector, with the model
    GRAYMATTER_EMBED configures (local, the embedded model, unless set). A store that
    holds another model's vectors is switched to this one first (every live fact is
    embedded again)."""
    if agent_option is not None and agent is not None and agent_option != agent:
        raise usage_error(f"two agents given: --agent {agent_option!r} and {agent!r}")
    agent = agent_option if agent_option is not None else agent
    from graymatter_tui.embedding.factory import from_settings
    from graymatter_tui.embedding.settings import EmbedSettings
    from graymatter_tui.embedding.worker import Worker

    if agent is not None:
        validate_agent(agent)
    settings = EmbedSettings.from_env()
    embedder = from_settings(settings)
    if embedder is None:
        raise InvalidInput(
            "embeddings are off (GRAYMATTER_EMBED=none): set GRAYMATTER_EMBED=local (the "
            "default), ollama or openai"
        )
    store = open_store(data_dir)
    worker = Worker(store, embedder, batch=settings.batch, agent=agent)
    with stderr_progress(as_json) as progress:
        result = worker.drain(progress)
    model, dimension = store.embed_model()
    if as_json:
        emit_json(
            {
                "agent": agent,
                "model": model,
                "dimension": dimension,
                "embedded": result.stored,
                "skipped": result.skipped,
                "requeued": result.requeued,
                "backlog": result.backlog,
                "unreadable": result.unreadable,
                "held_for_review": result.held,
            }
        )
        return
    scope = f" of {one_line(agent)}" if agent else ""
    say(
        f"embedded {counted(result.stored, 'fact')}{scope} with {one_line(model or '?')} "
        f"(dimension {dimension or '?'}); {result.backlog} waiting"
    )
    if result.unreadable:
        said = counted(result.unreadable, "fact holds", "facts hold")
        say(f"{said} nothing the model can read (only emoji or symbols): found by keyword only")
    if result.held:
        items = counted_pairs(result.held)
        say(f"held {items} found by meaning for review (graymatter-tui review list)")
    if result.requeued:
        queued = counted(result.requeued, "fact was", "facts were")
        say(f"the store switched to this model: {queued} queued again")
