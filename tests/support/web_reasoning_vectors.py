"""Reply-format vectors for the browser runtime (web/test/vectors/reasoning.json): each
hand-written reply of tests/support/reasoning_cases.py with the events the Python parsers
give it, which formats chat templates and vocabularies are found to speak, and the OpenAI
deltas and message the server's ChoiceReply builds from replies fed in pieces (with and
without tools). web/test/reasoning.test.mjs holds web/src/reasoning.js and replies.js to
them, at every split."""

from __future__ import annotations

from mlcx.runtime.openai_api.reply import ChoiceReply
from mlcx.runtime.openai_api.tools import ToolPlan
from mlcx.runtime.text.reasoning import FORMATS
from mlcx.runtime.text.reasoning.events import event_dict, merged
from mlcx.runtime.text.reasoning.formats import detect_format
from tests.support.reasoning_cases import CASES

HARMONY_TOKENS = ["<|start|>", "<|channel|>", "<|message|>", "<|end|>"]
# (chat template, tokens of the vocabulary) -> the format found
DETECT_CASES = [
    ("{{ '<|start|>assistant<|channel|>final<|message|>' }}", HARMONY_TOKENS),
    ("{{ '<|channel|>' }}", HARMONY_TOKENS[:3]),
    ("{{ '<think>\\n' }}", ["<think>", "</think>"]),
    ("{{ '<think>\\n' }}", ["<think>"]),
    ("{{ messages }}", ["<think>", "</think>", *HARMONY_TOKENS]),
    (None, ["<think>", "</think>"]),
]
# name -> (case of CASES, pieces' cut points, tools parsed)
REPLY_CASES = {
    "harmony answer": ("harmony: analysis then final", (5, 30, 60, 90), False),
    "harmony call": ("harmony: a tool call, recipient in the channel", (40, 80, 130, 150), True),
    "harmony calls without tools": ("harmony: a preamble, then two calls", (20, 90, 140), False),
    "think answer": ("think: reasoning, then content", (3, 12, 30), False),
    "think then a generic call": ("think: empty reasoning, then a tool call", (10, 25, 50), True),
    "none": ("none: everything is content", (4, 20), False),
}
TOOLS = ToolPlan(tools=[], parameters={}, parse=True, constraint=None)


def _pieces(text: str, cuts: tuple[int, ...]) -> list[str]:
    bounds = (0, *cuts, len(text))
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


def _without_ids(value):
    if isinstance(value, list):
        return [_without_ids(v) for v in value]
    if isinstance(value, dict):
        return {k: _without_ids(v) for k, v in value.items() if k != "id"}
    return value


def _reply_case(case: str, cuts: tuple[int, ...], tools: bool) -> dict:
    name, tail, text, _ = CASES[case]
    pieces = _pieces(text, cuts)
    reply = ChoiceReply(FORMATS[name].parser(tail), TOOLS if tools else None)
    deltas = [reply.feed(p) for p in pieces]
    deltas[-1] += reply.finish()
    message = ChoiceReply(FORMATS[name].parser(tail), TOOLS if tools else None).message(text)
    return {
        "format": name,
        "prompt_tail": tail,
        "pieces": pieces,
        "tools": tools,
        "deltas": _without_ids(deltas),
        "message": _without_ids(message),
    }


def reasoning_vectors() -> dict:
    streams = {}
    for case, (name, tail, text, _) in CASES.items():
        parser = FORMATS[name].parser(tail)
        events = merged(parser.feed(text) + parser.finish())
        streams[case] = {
            "format": name,
            "prompt_tail": tail,
            "text": text,
            "events": [event_dict(e) for e in events],
        }
    detect = [
        {"template": t, "tokens": tokens, "format": detect_format(t, set(tokens).__contains__).name}
        for t, tokens in DETECT_CASES
    ]
    replies = {name: _reply_case(*spec) for name, spec in REPLY_CASES.items()}
    return {"streams": streams, "detect": detect, "replies": replies}
