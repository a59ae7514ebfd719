"""Replies in each format with the events they must parse to, written by hand from the
formats' documentation (gpt-oss's harmony guide, Qwen3's and DeepSeek-R1's chat templates).
tests/runtime/test_reasoning_parsers.py holds the Python parsers to them at every split; the
browser library is held to the same ones through web/test/vectors/reasoning.json."""

from __future__ import annotations

from mlcx.runtime.text.reasoning.events import (
    Content,
    Reasoning,
    ToolCallArguments,
    ToolCallStart,
)

ASSISTANT = "<|start|>assistant"  # how gpt-oss's template ends a generation prompt
CALL_ARGS = '{"location": "Tokyo"}'

# name -> (format, prompt tail, reply text, events)
CASES = {
    "harmony: analysis then final": (
        "harmony",
        ASSISTANT,
        "<|channel|>analysis<|message|>Need the\nweather.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>It is\nsunny.",
        [Reasoning("Need the\nweather."), Content("It is\nsunny.")],
    ),
    "harmony: final ends with <|return|>, nothing after counts": (
        "harmony",
        ASSISTANT,
        "<|channel|>final<|message|>caf\u00e9 \u4e2d\u6587 \U0001f600<|return|>junk",
        [Content("caf\u00e9 \u4e2d\u6587 \U0001f600")],
    ),
    "harmony: a tool call, recipient in the channel": (
        "harmony",
        ASSISTANT,
        "<|channel|>analysis<|message|>Call the tool.<|end|><|start|>assistant<|channel|>"
        f"commentary to=functions.get_weather <|constrain|>json<|message|>{CALL_ARGS}",
        [
            Reasoning("Call the tool."),
            ToolCallStart(0, "get_weather"),
            ToolCallArguments(0, CALL_ARGS),
        ],
    ),
    "harmony: a tool call, recipient after the role, ended by <|call|>": (
        "harmony",
        ASSISTANT,
        f" to=functions.get_weather<|channel|>commentary json<|message|>{CALL_ARGS}<|call|>",
        [ToolCallStart(0, "get_weather"), ToolCallArguments(0, CALL_ARGS)],
    ),
    "harmony: a preamble, then two calls": (
        "harmony",
        ASSISTANT,
        "<|channel|>commentary<|message|>Checking both.<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.a<|message|>{}<|call|>"
        '<|start|>assistant<|channel|>commentary to=functions.b_2<|message|>{"x": [1]}',
        [
            Content("Checking both."),
            ToolCallStart(0, "a"),
            ToolCallArguments(0, "{}"),
            ToolCallStart(1, "b_2"),
            ToolCallArguments(1, '{"x": [1]}'),
        ],
    ),
    "harmony: a built-in tool's call is reasoning": (
        "harmony",
        ASSISTANT,
        "<|channel|>analysis to=python<|message|>print(1 < 2)<|call|>",
        [Reasoning("print(1 < 2)")],
    ),
    "harmony: plain JSON (a constrained reply) is content": (
        "harmony",
        ASSISTANT,
        '{"name": "get_weather", "arguments": {}}',
        [Content('{"name": "get_weather", "arguments": {}}')],
    ),
    "harmony: plain text is content": (
        "harmony",
        ASSISTANT,
        "Hello there",
        [Content("Hello there")],
    ),
    "harmony: the prompt opened the final channel": (
        "harmony",
        "<|start|>assistant<|channel|>final<|message|>",
        "Sure.<|return|>",
        [Content("Sure.")],
    ),
    "harmony: the reply writes its own <|start|>": (
        "harmony",
        "<|start|>user<|message|>hi<|end|>",
        "<|start|>assistant<|channel|>analysis<|message|>a<|end|>"
        "<|start|>assistant<|channel|>final<|message|>b",
        [Reasoning("a"), Content("b")],
    ),
    "harmony: two analysis messages": (
        "harmony",
        ASSISTANT,
        "<|channel|>analysis<|message|>First. <|end|><|start|>assistant<|channel|>analysis"
        "<|message|>Second.<|end|><|start|>assistant<|channel|>final<|message|>Done.",
        [Reasoning("First. Second."), Content("Done.")],
    ),
    "harmony: a reply cut inside the header": (
        "harmony",
        ASSISTANT,
        "<|channel|>analysis<|message|>Thinking<|end|><|start|>assistant<|channel|>fin",
        [Reasoning("Thinking")],
    ),
    "think: reasoning, then content": (
        "think",
        "<|im_start|>assistant\n",
        "<think>\nI should greet.\n</think>\n\nHello!",
        [Reasoning("I should greet."), Content("Hello!")],
    ),
    "think: the prompt opened <think>": (
        "think",
        "<\uff5cAssistant\uff5c><think>\n",
        "I should greet.\n</think>\n\nHello!",
        [Reasoning("I should greet."), Content("Hello!")],
    ),
    "think: the prompt closed it (thinking off)": (
        "think",
        "<|im_start|>assistant\n<think>\n\n</think>\n\n",
        "Hello <think>!",
        [Content("Hello <think>!")],
    ),
    "think: no tags is content": (
        "think",
        "<|im_start|>assistant\n",
        "Hi, <thinking> is not a tag",
        [Content("Hi, <thinking> is not a tag")],
    ),
    "think: leading whitespace, tags inside reasoning": (
        "think",
        "<|im_start|>assistant\n",
        "\n<think>a < b, <think> </thin> \n</think>b </think>",
        [Reasoning("a < b, <think> </thin>"), Content("b </think>")],
    ),
    "think: cut while reasoning": (
        "think",
        "<|im_start|>assistant\n",
        "<think>\nstill thinking </thi",
        [Reasoning("still thinking </thi")],
    ),
    "think: empty reasoning, then a tool call": (
        "think",
        "<|im_start|>assistant\n",
        '<think>\n\n</think>\n\n<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>',
        [Content('<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>')],
    ),
    "none: everything is content": (
        "none",
        ASSISTANT,
        "<|channel|>final<|message|>Hi",
        [Content("<|channel|>final<|message|>Hi")],
    ),
}
