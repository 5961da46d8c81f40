"""Need analysis by an LLM under a JSON Schema, then hybrid retrieval of the closest SOP cases."""

from __future__ import annotations

from dataclasses import dataclass, field

from overseer.adapt._llm import failure
from overseer.adapt.repository import Hit, Mode, Repository
from overseer.adapt.sop import Need
from overseer.models import Model, ModelError, Usage, ask_structured

NEED_PROMPT = (
    "You analyse a task before a team of AI agents is assembled for it. Describe what the "
    "task needs as JSON: its objective in one sentence, the capabilities it calls for (for "
    "example: arithmetic, writing Python, checking code with tests, looking up hotel data), "
    "the tools that would help (choose among the listed tools, or none), and the roles a "
    "small team would need. Be short and concrete."
)


@dataclass
class NeedAnalysis:
    """The need of a query, whether it came from the model or the fallback, and the cost."""

    need: Need
    source: str  # "llm" | "fallback"
    errors: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)


def fallback_need(query: str) -> Need:
    """The need recorded when the model gives no valid analysis: the query's first line."""
    first = next((ln.strip() for ln in query.splitlines() if ln.strip()), query.strip())
    return Need(objective=(first or "solve the task")[:600])


async def analyse_need(
    model: Model,
    query: str,
    *,
    tools: list[str] | None = None,
    max_tries: int = 2,
    max_tokens: int = 256,
    seed: int | None = 0,
) -> NeedAnalysis:
    """The need analysis of `query`, re-asked up to `max_tries` times, else the fallback."""
    tool_line = f"Available tools: {', '.join(tools)}." if tools else "No tools are available."
    try:
        got = await ask_structured(
            model,
            [
                {"role": "system", "content": NEED_PROMPT},
                {"role": "user", "content": f"{tool_line}\n\nTask:\n{query[:3000]}"},
            ],
            parse=Need,
            max_reasks=max_tries - 1,
            max_tokens=max_tokens,
            seed=seed,
        )
    except ModelError as exc:
        return NeedAnalysis(fallback_need(query), "fallback", *failure(exc))
    return NeedAnalysis(got.value, "llm", got.errors, got.usage)


@dataclass(frozen=True)
class Retriever:
    """Top-K cases by lambda * sim(query) + (1 - lambda) * sim(need) (K = 2, lambda = 0.3)."""

    repository: Repository
    k: int = 2
    lam: float = 0.3
    mode: Mode = "hybrid"

    def retrieve(self, query: str, need: Need | None, domain: str | None = None) -> list[Hit]:
        hits = self.repository.search(
            query, need, k=self.k, lam=self.lam, mode=self.mode, domain=domain
        )
        if not hits and domain:
            hits = self.repository.search(query, need, k=self.k, lam=self.lam, mode=self.mode)
        return hits
