"""Decision prompts, one per intervention context, and the actions each context permits.

Written here in our own words; they carry the seed's rules: assess whether to intervene at
all first; for inefficiency weigh the cost of continuing against the cost of interrupting;
purification keeps structure, links, numbers and metadata lines verbatim.
"""

from __future__ import annotations

from typing import Any, Literal

from overseer.supervise.filters import Context

Action = Literal["approve", "provide_guidance", "correct_observation", "run_verification"]

# The seed's A(c); result synthesis is a purification of a sub-agent's report.
ALLOWED: dict[Context, tuple[Action, ...]] = {
    "error": ("correct_observation", "provide_guidance", "run_verification"),
    "inefficient": ("approve", "provide_guidance"),
    "excessive": ("correct_observation",),
    "synthesis": ("correct_observation",),
}

# The parameter each action needs.
PARAM: dict[Action, str | None] = {
    "approve": None,
    "provide_guidance": "guidance",
    "correct_observation": "new_observation",
    "run_verification": "task",
}

BASE = (
    "You supervise one agent of a multi-agent team: you keep it aligned with the team's goal, "
    "fix its errors and stop it from wasting work. First decide whether intervening helps at "
    "all; when it does, pick the single most effective action. Never invent facts: a "
    "corrected observation may only use what the observation or the trace shows. Reply with "
    "one JSON object: "
    '"analysis" (two sentences at most), "action", and "parameters".'
)

ACTION_HELP: dict[Action, str] = {
    "approve": "approve: the step is fine or the agent is best left to finish; no parameters.",
    "provide_guidance": (
        "provide_guidance: the observation is right but the agent's reasoning or next move is "
        "not; give one concrete instruction in parameters.guidance."
    ),
    "correct_observation": (
        "correct_observation: replace what the agent observed with a corrected or cleaned "
        "version, given in parameters.new_observation."
    ),
    "run_verification": (
        "run_verification: a fact or result needs checking with tools you do not have; put a "
        "precise question for the verifier in parameters.task."
    ),
}

CONTEXT_RULES: dict[Context, str] = {
    "error": (
        "The agent's last step failed; approving is not an option. Read the error, what the "
        "agent was trying to do and its recent steps, and name the most likely root cause. "
        "If the agent's next action must change (the usual case), give guidance that fixes "
        "it. If the agent is acting on wrong information from an observation, correct that "
        "observation. If you cannot resolve it without outside facts, ask for a verification."
    ),
    "inefficient": (
        "An efficiency check fired for this agent. It is a flag to review, not proof of a "
        "problem: the agent may be working through something methodically. Infer its plan "
        "from the team's recent steps and judge its progress. Compare the cost of letting it "
        "continue with the cost of interrupting it and having it start again on another "
        "path. If it is making progress and is close to done, approve, even if a cleverer "
        "path exists. If it is stuck (the same results again and again) or a far cheaper "
        "path exists and it is far from done, give guidance naming that better path "
        "concretely (which tool, which arguments)."
    ),
    "excessive": (
        "The agent received an observation too long to read efficiently. Rewrite it shorter "
        "without knowing or guessing the task: keep anything that could matter to some task. "
        "Rules: keep the structure (headings, lists, table rows, sections) in the same order; "
        "keep every link and URL, every number, date, name and quantity exactly as written; "
        "keep leading metadata lines such as 'Address:', 'Title:' or 'Viewport:' verbatim; "
        "drop scripts, styles, tag attributes other than href/src/alt/title, navigation, "
        "cookie notices, ads and repeated boilerplate; tighten wordy sentences but never drop "
        "a fact. Put the rewritten text in parameters.new_observation."
    ),
    "synthesis": (
        "A sub-agent has finished and sent a long report to the agent that asked for it. "
        "Write what the requesting agent needs: a direct, complete, self-contained answer to "
        "its request, combining every relevant finding in the report (details are often in "
        "the long parts, not the short summary). Keep the report's structure (headings, "
        "lists) where it carries meaning, and every number, name and source. Put it in "
        "parameters.new_observation."
    ),
}


def system_prompt(context: Context, allowed: tuple[Action, ...]) -> str:
    """The supervisor's instructions for one context, listing only the permitted actions."""
    actions = "\n".join(f"- {ACTION_HELP[a]}" for a in allowed)
    return f"{BASE}\n\n{CONTEXT_RULES[context]}\n\nPermitted actions:\n{actions}"


def decision_schema(allowed: tuple[Action, ...]) -> dict[str, Any]:
    """JSON Schema of a decision: analysis, one permitted action, its parameters."""
    params = {p: {"type": "string"} for a in allowed if (p := PARAM[a])}
    return {
        "type": "object",
        "properties": {
            "analysis": {"type": "string", "maxLength": 600},
            "action": {"enum": list(allowed)},
            "parameters": {"type": "object", "properties": params},
        },
        "required": ["analysis", "action", "parameters"],
    }
