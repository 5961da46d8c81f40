"""`overseer models`: the named local models, installed or not."""

from __future__ import annotations

from overseer.cli._app import app, out_console


@app.command("models")
def models_cmd() -> None:
    """List the named local models, whether they are installed, and their sizes."""
    from rich.table import Table

    from overseer.models import list_models

    t = Table(title="local models")
    for col in ("name", "installed", "ready", "size", "description / install"):
        t.add_column(col)
    for s in list_models():
        t.add_row(
            s.name,
            "yes" if s.installed else "no",
            "yes" if s.assembled else ("on first use" if s.installed else "no"),
            f"{s.size_bytes / 1e6:.0f} MB",
            s.description if s.installed else f"{s.description}\n  install: {s.install}",
        )
    out_console().print(t)
