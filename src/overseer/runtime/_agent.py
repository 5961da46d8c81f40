"""The agent step: ReAct-style JSON (a thought, then a tool call or an answer), re-asked if bad.

An agent whose spec asks for text answers (`answer_format="text"`) chooses its action in JSON
too, but then writes the answer in one more call without a grammar, as one direct call does.

Prompts put what all agents share first (common rules, the task), then what is the agent's
own (role, teammates' messages, tools), so a model server reuses the cached shared prefix.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from overseer.models import (
    Completion,
    Message,
    Model,
    ModelError,
    StructuredOutputError,
    ask_structured,
)
from overseer.models.positions import decision_positions
from overseer.runtime._channel import ChannelMessage
from overseer.runtime._interaction import Interaction, ToolRecord
from overseer.runtime._spec import AgentSpec
from overseer.runtime._tools import Tool
from overseer.runtime._turns import (
    CLOSED_NOTE,
    COPIED_NOTE,
    LAST_NOTE,
    TurnPolicy,
    closed_turn,
    copies_note,
)
from overseer.runtime._values import supported_numbers

if TYPE_CHECKING:
    from overseer.runtime._bus import Outcome

COMMON_RULES = (
    "You are one agent in a team that solves a task together. Teammates may send you their "
    "work; use it with critical thinking, never copy it blindly. Reply only with JSON: a short "
    '"thought", then an "action": "answer" with your message to the team in "answer", or a '
    'tool name with its "args". Keep answers short and end them with the final result, in '
    "the form the task asks for (for code: the whole function, not a call or an example)."
)

#: the user turn that asks a text-answer agent for its answer, after its JSON step chose it
TEXT_ANSWER_NOTE = (
    "Write your message to the team now, as plain text (not JSON), ending with the final "
    "result; put any code in one ```python block."
)


@dataclass(frozen=True)
class AgentContext:
    """What an agent sees this round: the task, its teammates' messages, its own last answer."""

    global_task: str
    round: int
    spatial_inputs: Sequence[ChannelMessage]
    temporal_inputs: Sequence[ChannelMessage]
    local_task: str = ""
    #: the team list (`team_roster`) heading every prompt of the team, or "" (no list)
    roster: str = ""


class AgentStepError(Exception):
    """The agent could not produce a usable step; `reason` is an AgentFailure reason."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def action_schema(tools: Sequence[Tool], *, text_answer: bool = False) -> dict[str, Any]:
    """The JSON Schema of one step: an answer, or a call of one of the agent's tools. With
    `text_answer` the answer option holds no "answer" (a later call without grammar writes it)."""
    answer: dict[str, Any] = {
        "type": "object",
        "properties": {
            "thought": {"type": "string", "maxLength": 800},
            "action": {"const": "answer"},
            "answer": {"type": "string", "minLength": 1},  # an empty answer is re-asked
        },
        "required": ["thought", "action", "answer"],
    }
    if text_answer:
        del answer["properties"]["answer"]
        answer["required"] = ["thought", "action"]
        answer["additionalProperties"] = False
    options = [answer] + [
        {
            "type": "object",
            "properties": {
                "thought": {"type": "string", "maxLength": 800},
                "action": {"const": t.name},
                "args": dict(t.parameters),
            },
            "required": ["thought", "action", "args"],
        }
        for t in tools
    ]
    return options[0] if len(options) == 1 else {"anyOf": options}


def team_roster(agents: Sequence[AgentSpec]) -> str:
    """The team list: each agent's name, role and instructions, one line each. With it at the
    head of every prompt, a tool-less agent's own part shrinks to its name and role."""
    lines = ["Team:"]
    for a in agents:
        line = f"- {a.name}" + (f", {a.role}" if a.role else "")
        lines.append(line + (f": {a.instructions}" if a.instructions else ""))
    return "\n".join(lines)


def team_context(
    task: str,
    earlier: Sequence[ChannelMessage],
    now: Sequence[ChannelMessage],
    roster: str = "",
) -> str:
    """The head of a team prompt: the team list if any, the task, the previous round's
    messages, this round's. The agents of a round and the decision node write it the same
    way, so consecutive prompts share it as a prefix and a model server serves it from its
    cache."""
    head = (roster + "\n\n" if roster else "") + f"Task:\n{task}"
    for title, msgs in (("From the previous round:", earlier), ("From teammates this round:", now)):
        if msgs:
            head += "\n\n" + "\n".join([title, *(f"[{m.sender}] {m.content}" for m in msgs)])
    return head + "\n\n"


def build_messages(spec: AgentSpec, ctx: AgentContext, tools: Sequence[Tool]) -> list[Message]:
    """What every agent shares first (rules, team list, task, teammates' messages: the
    longest common prefix of a round's prompts), then this agent's own part (its name, role,
    instructions, its own last answer when that is all it reads of the previous round, its
    tools). With a team list a tool-less agent is only named: its instructions are in the
    list. An agent with tools keeps them beside its tools (without them there, the 0.5B
    researcher stopped using its tools: browse 37.5% -> 0%, docs/evidence)."""
    own_only = all(m.sender == spec.name for m in ctx.temporal_inputs)
    earlier = () if own_only else ctx.temporal_inputs
    if ctx.roster and not tools:
        own = [f"You are {spec.name}" + (f", {spec.role}." if spec.role else ".")]
    else:
        own = [f"Your name: {spec.name}."]
        if spec.role:
            own.append(f"Your role: {spec.role}")
        if spec.instructions:
            own.append(spec.instructions)
    if ctx.local_task:
        own.append(f"Your sub-task: {ctx.local_task}")
    if own_only and ctx.temporal_inputs:
        own.append("Your answer in the previous round:")
        own += [m.content for m in ctx.temporal_inputs]
    if tools:
        own.append("Tools you may call:")
        own += [
            f"- {t.name}: {t.description} args: {json.dumps(dict(t.parameters))}" for t in tools
        ]
    head = team_context(ctx.global_task, earlier, ctx.spatial_inputs, ctx.roster)
    return [
        {"role": "system", "content": COMMON_RULES},
        {"role": "user", "content": head + "\n".join(own)},
    ]


def parse_step(
    data: Any, tools: Mapping[str, Tool], *, text_answer: bool = False
) -> dict[str, Any]:
    """Check a step (the reply's decoded JSON) against the action schema; raises ValueError
    saying what is wrong. With `text_answer` an answer step needs no "answer" string."""
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    action = data.get("action")
    if action == "answer":
        if text_answer:
            return data
        if not isinstance(data.get("answer"), str) or not data["answer"].strip():
            raise ValueError('action "answer" needs a non-empty "answer" string')
        return data
    if action in tools:
        if not isinstance(data.get("args"), dict):
            raise ValueError(f'action "{action}" needs an "args" object')
        return data
    allowed = ["answer", *tools]
    raise ValueError(f'"action" must be one of {allowed}, got {action!r}')


#: the bus's judgement of a step: the observation to read next, or `stop` (the turn ends)
Judge = Callable[[Interaction], Awaitable["Outcome"]]
#: asked before a tool runs: None lets it run; a text refuses it (the agent reads the text)
Before = Callable[[Interaction], Awaitable[str | None]]
#: the texts an agent is shown for its earlier tool observations (one per record, oldest first)
View = Callable[[str, Sequence[ToolRecord]], list[str]]


@dataclass(frozen=True)
class _Done:
    """One finished tool step of this turn: the model's reply and what the tool gave back."""

    raw: str
    record: ToolRecord
    note: str
    refused: bool = False


class Agent:
    """Runs one agent's steps for a round: model call, tool calls through the bus, an answer."""

    def __init__(
        self,
        spec: AgentSpec,
        model: Model,
        tools: Sequence[Tool],
        *,
        max_steps: int = 4,
        max_reasks: int = 2,
        max_tokens: int = 512,
        temperature: float = 0.0,
        seed: int | None = None,
        top_logprobs: int = 0,
        answer_after_refusals: int = 2,
    ) -> None:
        self.spec = spec
        #: after `answer_after_refusals` refused tool calls in a row the next step may only
        #: answer (a small model otherwise repeats the refused call until max_steps, a model
        #: call each time); the one turn policy of every host
        self.turns = TurnPolicy(answer_after_refusals)
        self.model = model
        self.tools = {t.name: t for t in tools}
        self._tool_list = list(self.tools.values())
        self.max_steps = max_steps
        #: how every model call of a step is sampled (`ask_structured`'s options); top_logprobs
        #: > 0: each step's completion carries top-k logprobs
        self._sampling: dict[str, Any] = {
            "max_reasks": max_reasks,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "seed": seed,
            "top_logprobs": top_logprobs,
        }
        #: the answer is written by a call without grammar after the JSON step chose it
        self.text_answer = spec.answer_format == "text"
        self._answer_schema = action_schema([], text_answer=self.text_answer)
        self._schema = (
            action_schema(list(tools), text_answer=self.text_answer)
            if tools
            else self._answer_schema
        )

    async def _ask(
        self, messages: list[Message], *, tools_open: bool = True
    ) -> tuple[dict[str, Any], Completion]:
        """One step from the model, re-asked up to max_reasks times when unparsable; also the
        accepted Completion (its text, usage and logprobs). With tools closed only an answer
        is accepted."""
        tools = self.tools if tools_open else {}
        return await self._structured(
            messages,
            schema=self._schema if tools_open else self._answer_schema,
            parse=lambda data: parse_step(data, tools, text_answer=self.text_answer),
        )

    async def _text_answer(
        self, messages: list[Message], data: dict[str, Any], c: Completion | None
    ) -> tuple[dict[str, Any], Completion]:
        """The answer of a text-answer agent: one more call without grammar, on the step's
        prompt with TEXT_ANSWER_NOTE added to its last turn; the JSON step `c` (None when the
        step could only answer) is not shown: a small model copies code from its thought with
        the JSON escapes. The Completion is the text call's, with the tokens of both calls."""
        last = messages[-1]
        note: Message = {
            "role": last["role"],
            "content": f"{last['content']}\n\n{TEXT_ANSWER_NOTE}",
        }
        text, t = await self._structured(
            [*messages[:-1], note], schema=None, parse=_text, as_json=False, reask=_reask
        )
        if c is not None:
            t = replace(t, usage=c.usage + t.usage, latency_s=c.latency_s + t.latency_s)
        return {**data, "answer": text}, t

    async def _structured(self, messages: list[Message], **how: Any) -> tuple[Any, Completion]:
        """`ask_structured` with this agent's settings: the value and the accepted Completion;
        its failures as AgentStepError."""
        try:
            got = await ask_structured(self.model, messages, **self._sampling, **how)
        except StructuredOutputError as exc:
            raise AgentStepError("unparsable", exc.errors[-1]) from exc
        except ModelError as exc:
            raise AgentStepError("model_error", str(exc)) from exc
        return got.value, got.completion

    async def run(
        self,
        ctx: AgentContext,
        judge: Judge,
        *,
        before: Before | None = None,
        view: View | None = None,
        refused: Mapping[str, int] | None = None,
    ) -> str | None:
        """Steps until an answer; every tool call and the answer pass `judge` (the bus). None:
        a verdict ended the turn (a rollback, a replaced agent), so there is no message.

        `before` may refuse a tool call before it runs; `view` gives the texts shown for the
        turn's earlier tool observations (e.g. stubs for old ones), rebuilt at each step;
        `refused` is the refusing host's count of each agent's refused calls in a row (the
        bus's, `Bus.refused`): at `answer_after_refusals` of them the tools close.
        """
        base = build_messages(self.spec, ctx, self._tool_list)
        question = ctx.local_task or ctx.global_task
        done: list[_Done] = []
        for step in range(self.max_steps):
            # the last step of a turn that used tools may only answer (as smolagents does at
            # its step limit): otherwise every step's findings are lost with the turn
            last = 0 < step == self.max_steps - 1 and bool(done)
            stuck = self._stuck(refused)
            open_ = not stuck and not last
            messages = self._messages(base, done, view, open_, question)
            data, c = await self._decide(messages, open_)
            if data["action"] == "answer":
                data, c = await self._checked(messages, data, c, done, question, stuck)
            i = self._interaction(ctx, step, data, c)
            if data["action"] == "answer":
                out = await judge(i)
                return None if out.stop else out.observation
            finished = await self._tool_step(i, data["args"], c.text, judge, before)
            if finished is None:
                return None
            done.append(finished)
        raise AgentStepError("no_answer", f"no answer after {self.max_steps} steps")

    async def _checked(
        self,
        messages: list[Message],
        data: dict[str, Any],
        c: Completion,
        done: Sequence[_Done],
        question: str,
        stuck: bool,
    ) -> tuple[dict[str, Any], Completion]:
        """An answer as the turn policy lets it stand: asked again once when it copies
        overseer's words or a trap's text, or states a value no tool result showed after
        refusals closed the tools; a copy left after that is no answer."""
        notes = _notes(done)
        seen = _seen(done, stuck, question)
        again = self.turns.reask(str(data["answer"]), notes, _outputs(done), question, seen=seen)
        if again is None:
            return data, c
        messages = [
            *messages,
            {"role": "assistant", "content": c.text},
            {"role": "user", "content": again},
        ]
        data, c2 = await self._decide(messages, False)
        c = replace(c2, usage=c.usage + c2.usage, latency_s=c.latency_s + c2.latency_s)
        if copies_note(str(data["answer"]), [*notes, CLOSED_NOTE, LAST_NOTE, COPIED_NOTE]):
            data = {**data, "answer": ""}  # overseer's words are no answer
        instead = self.turns.settle(str(data["answer"]), question, seen)
        if instead is not None:
            data = {**data, "answer": instead}  # still a value nothing read supports
        return data, c

    async def _decide(
        self, messages: list[Message], open_: bool
    ) -> tuple[dict[str, Any], Completion]:
        """One step's decision: a JSON step (a tool call or an answer), then, for a text-answer
        agent that answers, its text; with no tool open a text-answer agent only writes text."""
        if self.text_answer and not (open_ and self.tools):  # no choice: no JSON step
            return await self._text_answer(messages, {"thought": "", "action": "answer"}, None)
        data, c = await self._ask(messages, tools_open=open_)
        if data["action"] == "answer" and self.text_answer:
            data, c = await self._text_answer(messages, data, c)
        return data, c

    def _interaction(
        self, ctx: AgentContext, step: int, data: dict[str, Any], c: Completion
    ) -> Interaction:
        """The step as the bus sees it: a message (the answer, with the thought in front when
        the agent shares it), or a tool call not yet run (no observation)."""
        thought = str(data.get("thought", ""))
        common: dict[str, Any] = {
            "agent": self.spec.name,
            "global_task": ctx.global_task,
            "local_task": ctx.local_task,
            "round": ctx.round,
            "step": step,
            "thought": thought,
            "usage": c.usage,
            "role": self.spec.role,
            "logprobs": c.logprobs,
        }
        if data["action"] == "answer":
            message = data["answer"]
            if self.spec.share_thought and thought.strip():
                message = f"{thought.strip()}\n{message}"
            return Interaction(
                kind="message",
                input=message,
                observation=message,
                decision_positions=_answer_positions(c, whole=self.text_answer),
                **common,
            )
        return Interaction(
            kind=self.tools[data["action"]].kind,
            input=json.dumps(data["args"], ensure_ascii=False),
            observation="",
            tool=data["action"],
            **common,
        )

    async def _tool_step(
        self,
        call: Interaction,
        args: dict[str, Any],
        raw: str,
        judge: Judge,
        before: Before | None,
    ) -> _Done | None:
        """Run one tool call (unless `before` refuses it) and pass its result through `judge`;
        None when the verdict ended the turn."""
        assert call.tool is not None
        refused = await before(call) if before is not None else None
        if refused is not None:
            return _Done(raw, ToolRecord(call.tool, call.input, refused), "", refused=True)
        result = await self.tools[call.tool].call(args)
        out = await judge(replace(call, observation=result.output, error=result.error))
        if out.stop:
            return None
        note = f"\nError: {result.error}" if result.error else ""
        return _Done(raw, ToolRecord(call.tool, call.input, out.observation), note)

    def _stuck(self, refused: Mapping[str, int] | None) -> bool:
        """Whether this agent's last `answer_after_refusals` tool calls were all refused, as
        the host that refuses them counts (one counter for every host: the bus's)."""
        in_a_row = refused.get(self.spec.name, 0) if refused is not None else 0
        return self.turns.after_refusals(in_a_row) is not None

    def _messages(
        self,
        base: list[Message],
        done: Sequence[_Done],
        view: View | None,
        open_: bool = True,
        question: str = "",
    ) -> list[Message]:
        """The prompt of the next step: the base messages, then each earlier tool step with
        its observation as `view` shows it (and, with tools closed, a turn asking `question`)."""
        records = [d.record for d in done]
        texts = (
            view(self.spec.name, records)
            if view is not None and done
            else [r.text for r in records]
        )
        messages = list(base)
        for d, text in zip(done, texts, strict=True):
            messages += [
                {"role": "assistant", "content": d.raw},
                {"role": "user", "content": f"Observation from {d.record.tool}:\n{text}{d.note}"},
            ]
        if not open_:
            messages.append({"role": "user", "content": closed_turn(question)})
        return messages


def _notes(done: Sequence[_Done]) -> list[str]:
    """What overseer wrote into this turn: the refusals the agent read."""
    return [d.record.text for d in done if d.refused]


def _seen(done: Sequence[_Done], stuck: bool, question: str) -> set[str] | None:
    """The values this turn's tool results support as an answer to `question`, once refusals
    closed the tools after some ran (None otherwise: open tools, the last step of a turn, whose
    answer may be derived, or nothing read yet)."""
    if not stuck or not any(not d.refused for d in done):
        return None
    ran = [supported_numbers(f"{d.record.text}\n{d.note}", question) for d in done if not d.refused]
    return set().union(*ran)


def _outputs(done: Sequence[_Done]) -> list[str]:
    """The short tool outputs of this turn that ran (a trap's text that kept coming back)."""
    return [d.record.text for d in done if not d.refused and len(d.record.text) <= 300]


def _answer_positions(c: Completion, *, whole: bool = False) -> tuple[int, ...]:
    """The tokens of the answer value: where a team agent's decision sits (`whole`: every
    token, for a text answer's completion)."""
    if not c.logprobs:
        return ()
    if whole:
        return tuple(range(len(c.logprobs)))
    return tuple(decision_positions(c.logprobs, ("answer",), numbers=False))


def _text(text: Any) -> str:
    """A text answer, stripped; ValueError when it is empty (it is then asked again)."""
    if not str(text).strip():
        raise ValueError("the answer is empty")
    return str(text).strip()


def _reask(text: str, error: str) -> str:
    """The user turn after an empty text answer."""
    return f"That reply is invalid: {error}. {TEXT_ANSWER_NOTE}"
