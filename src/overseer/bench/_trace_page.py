"""One run's trace as a self-contained HTML page: the team graph (inline SVG), each agent's
messages in order, and the plug-ins' verdicts and rollbacks highlighted where they happened."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

Event = Mapping[str, Any]

#: Events the page highlights as interventions, and the CSS class of each.
MARKED = {
    "verdict": "verdict",
    "rollback": "rollback",
    "verification": "verdict",
    "verdict_ignored": "verdict",
    "agent_replaced": "rollback",
    "team_replaced": "rollback",
    "agent_failure": "failure",
    "error": "failure",
}
_SAID = {"interaction": "observation", "message": "content", "turn": "message"}
_MAX_TEXT = 6000

CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:70em;line-height:1.4}
pre{white-space:pre-wrap;background:#f6f6f6;padding:.4em;margin:.2em 0}
.verdict{background:#fff3cd;border-left:4px solid #e0a800;padding:.3em .6em;margin:.3em 0}
.rollback{background:#f8d7da;border-left:4px solid #c82333;padding:.3em .6em;margin:.3em 0}
.failure{background:#eee;border-left:4px solid #555;padding:.3em .6em;margin:.3em 0}
.step{border-left:4px solid #8ab;padding:.2em .6em;margin:.3em 0}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left}
"""


def _text(value: Any, limit: int = _MAX_TEXT) -> str:
    s = str(value)
    return escape(s if len(s) <= limit else s[:limit] + f" … ({len(s) - limit} more characters)")


def _positions(names: Sequence[str], w: int, h: int) -> dict[str, tuple[float, float]]:
    """Agents on a circle (one agent: the centre)."""
    if len(names) == 1:
        return {names[0]: (w / 2, h / 2)}
    r = min(w, h) / 2 - 40
    return {
        n: (
            w / 2 + r * math.cos(2 * math.pi * i / len(names) - math.pi / 2),
            h / 2 + r * math.sin(2 * math.pi * i / len(names) - math.pi / 2),
        )
        for i, n in enumerate(names)
    }


def _edge(a: tuple[float, float], b: tuple[float, float], dashed: bool) -> str:
    """A line (spatial) or a bent dashed line (temporal) from a to b, stopping short of b."""
    dx, dy = b[0] - a[0], b[1] - a[1]
    d = math.hypot(dx, dy) or 1.0
    bx, by = b[0] - dx / d * 24, b[1] - dy / d * 24
    if not dashed:
        return (
            f'<line x1="{a[0]:.0f}" y1="{a[1]:.0f}" x2="{bx:.0f}" y2="{by:.0f}" '
            'stroke="#246" stroke-width="2" marker-end="url(#arrow)"/>'
        )
    mx, my = (a[0] + bx) / 2 - dy / d * 30, (a[1] + by) / 2 + dx / d * 30
    return (
        f'<path d="M{a[0]:.0f},{a[1]:.0f} Q{mx:.0f},{my:.0f} {bx:.0f},{by:.0f}" fill="none" '
        'stroke="#a60" stroke-width="1.5" stroke-dasharray="5,4" marker-end="url(#arrow)"/>'
    )


def team_svg(team: Mapping[str, Any], w: int = 420, h: int = 300) -> str:
    """The team as an inline SVG: agents, spatial edges (solid), temporal edges (dashed)."""
    names = [str(a["name"]) for a in team.get("agents", [])]
    pos = _positions(names, w, h)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img" '
        f'aria-label="team graph"><defs><marker id="arrow" viewBox="0 0 10 10" refX="9" '
        'refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M0,0 L10,5 L0,10 z" fill="#333"/></marker></defs>'
    ]
    for kind, dashed in (("spatial_edges", False), ("temporal_edges", True)):
        for src, dst in team.get(kind, []):
            if src in pos and dst in pos:
                parts.append(_edge(pos[src], pos[dst], dashed))
    for n, (x, y) in pos.items():
        parts.append(
            f'<circle cx="{x:.0f}" cy="{y:.0f}" r="20" fill="#cde" stroke="#246"/>'
            f'<text x="{x:.0f}" y="{y + 34:.0f}" text-anchor="middle" '
            f'font-size="12">{escape(n)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _marked(e: Event) -> str:
    who = e.get("by", "")
    what = e.get("action", e["event"])
    why = e.get("reason") or e.get("finding") or e.get("detail") or e.get("error") or ""
    body = e.get("text") or e.get("task") or ""
    extra = f" ({e['removed']} messages removed)" if "removed" in e else ""
    return (
        f'<div class="{MARKED[e["event"]]}"><b>{escape(str(e["event"]))}: '
        f"{escape(str(what))}</b> by {escape(str(who))}{extra}: {_text(why, 600)}"
        + (f"<pre>{_text(body)}</pre>" if body else "")
        + "</div>"
    )


def _step(e: Event) -> str:
    where = f"round {e.get('round', '?')}" + (f", step {e['step']}" if "step" in e else "")
    kind = e.get("kind") or e["event"]
    inp = e.get("input")
    return (
        f'<div class="step"><b>{escape(str(kind))}</b> ({escape(where)})'
        + (f"<details><summary>input</summary><pre>{_text(inp)}</pre></details>" if inp else "")
        + f"<pre>{_text(e.get(_SAID[e['event']], ''))}</pre></div>"
    )


def _agent_of(e: Event) -> str | None:
    if e["event"] in _SAID:
        return str(e.get("agent") or e.get("sender") or "")
    if e["event"] in MARKED and e.get("agent"):
        return str(e["agent"])
    return None


def trace_html(events: Sequence[Event], *, title: str = "") -> str:
    """The page of one run's events (as `read_trace` gives them)."""
    start = next((e for e in events if e["event"] == "run_start"), {})
    end = next((e for e in reversed(events) if e["event"] == "run_end"), {})
    team: Mapping[str, Any] = start.get("team") or next(
        (e["team"] for e in events if e["event"] == "team"), {}
    )
    agents: dict[str, list[str]] = {str(a["name"]): [] for a in team.get("agents", [])}
    run_level: list[str] = []
    said: dict[str, str] = {}  # each agent's last step output
    for e in events:
        who = _agent_of(e)
        if who is None:
            if e["event"] in MARKED:
                run_level.append(_marked(e))
            continue
        text = str(e.get(_SAID.get(e["event"], ""), ""))
        if e["event"] == "message" and said.get(who) == text:
            continue  # the channel post repeats the step just shown
        said[who] = text
        agents.setdefault(who, []).append(_marked(e) if e["event"] in MARKED else _step(e))
    run_id = str(start.get("run") or (events[0]["run"] if events else "?"))
    head = [
        ("run", run_id),
        ("model", start.get("model", "?")),
        ("plug-ins", ", ".join(start.get("supervisors", [])) or "none"),
        ("stop", end.get("stop_reason", "(unfinished)")),
        ("answer", end.get("answer", "")),
        ("tokens", ", ".join(f"{k} {v}" for k, v in end.get("usage", {}).items())),
    ]
    rows = "".join(f"<tr><th>{k}</th><td>{_text(v, 2000)}</td></tr>" for k, v in head)
    body = [
        f"<h1>{escape(title or 'run ' + run_id)}</h1><table>{rows}</table>",
        f"<h2>Query</h2><pre>{_text(start.get('query', ''))}</pre>",
        f"<h2>Team</h2>{team_svg(team)}<p>solid: spatial edges (within a round); "
        "dashed: temporal edges (to the next round)</p>",
    ]
    if run_level:
        body.append("<h2>Run-level interventions</h2>" + "".join(run_level))
    for name, items in agents.items():
        body.append(f"<h2>Agent {escape(name)}</h2>" + ("".join(items) or "<p>no messages</p>"))
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title or run_id)}</title><style>{CSS}</style></head><body>"
        + "".join(body)
        + "</body></html>\n"
    )
