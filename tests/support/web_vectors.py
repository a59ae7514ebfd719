"""Shared test vectors for the browser runtime (web/test/vectors/*.json): what the Python
runtime does, written down for `node --test` to hold the JS runtime to (web/test/*.test.mjs).

`python -m tests.support.web_vectors` rewrites the files; tests/webgpu/test_web_vectors.py
fails when they differ from what the Python side computes now, and the node tests fail when
the JS side computes anything else, so drift on either side fails a test.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from mlcx.kernels.step_params import PAGE_TABLES
from mlcx.runtime.kv.manager import KVCacheManager
from mlcx.runtime.openai_api.call_syntax import SYNTAXES
from mlcx.runtime.openai_api.tool_calls import ToolReply
from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.sample.sampler import sample
from mlcx.runtime.sample.sampling_state import SamplingState
from mlcx.runtime.text.stop import StopStringMatcher
from mlcx.runtime.text.tool_prompt import with_generic_tools
from tests.support.web_embed_vectors import embed_vectors
from tests.support.web_image_vectors import image_vectors
from tests.support.web_qwen_vectors import qwen_vectors
from tests.support.web_reasoning_vectors import reasoning_vectors

VECTORS = Path(__file__).resolve().parents[2] / "web" / "test" / "vectors"
VOCAB = 300  # over one 256-token draw block, so both levels of the draw are exercised
STEPS = 6
PROMPT = [3, 5, 5, 7, 250]

# OpenAI request fields, as a request gives them
SAMPLER_CASES = {
    "greedy": {"temperature": 0},
    "temperature": {"temperature": 0.7, "seed": 1},
    "temperature one": {"temperature": 1.0, "seed": 2},
    "top_p": {"temperature": 0.9, "top_p": 0.8, "seed": 3},
    "top_k": {"temperature": 1.2, "top_k": 20, "seed": 4},
    "top_k and top_p": {"temperature": 0.8, "top_k": 40, "top_p": 0.7, "seed": 5},
    "min_p": {"temperature": 1.0, "min_p": 0.05, "seed": 6},
    "top_p and min_p": {"temperature": 1.5, "top_p": 0.95, "min_p": 0.02, "seed": 7},
    "repetition penalty": {"temperature": 0, "repetition_penalty": 1.8},
    "presence and frequency": {
        "temperature": 0.5,
        "seed": 8,
        "presence_penalty": 1.5,
        "frequency_penalty": 1.0,
    },
    "logit_bias": {"temperature": 0, "logit_bias": {"17": 100, "250": -100}},
    "logprobs": {"temperature": 0.6, "seed": 9, "logprobs": True, "top_logprobs": 5},
    "big seed": {"temperature": 1.0, "seed": 2**40 + 3},
}


def _params(request: dict) -> SamplingParams:
    fields = dict(request)
    if "logit_bias" in fields:
        fields["logit_bias"] = {int(k): v for k, v in fields["logit_bias"].items()}
    return SamplingParams(**fields)


def _sampler_case(request: dict, rng: np.random.Generator) -> dict:
    # two decimals: the JSON numbers round to the same float32 in numpy and in JS
    values = np.round(rng.normal(0.0, 3.0, (STEPS, VOCAB)), 2)
    state = SamplingState(_params(request), PROMPT)
    steps = []
    for row in values:
        [result] = sample(row[None, :].astype(np.float32), [state])
        state.append(result.token_id)
        step = {"logits": row.tolist(), "token": result.token_id}
        if result.logprob is not None:
            step["logprob"] = result.logprob
            step["top_logprobs"] = [[i, lp] for i, lp in result.top_logprobs or []]
        steps.append(step)
    return {"request": request, "prompt": PROMPT, "steps": steps}


def sampler_vectors() -> dict:
    rng = np.random.default_rng(2024)
    return {name: _sampler_case(req, rng) for name, req in SAMPLER_CASES.items()}


STOP_CASES = {
    "split across deltas": (["###"], ["Hello #", "#", "# world"]),
    "never hit": (["STOP"], ["a S", "TO", "x"]),
    "first to end wins": (["abcd", "bc"], ["xabcd"]),
    "tie goes to the longer": (["abc", "bc"], ["zabc"]),
    "held then flushed": (["end"], ["the e", "n"]),
    "unicode": (["世界"], ["你好世", "界!"]),
}


def stop_vectors() -> dict:
    out = {}
    for name, (stops, deltas) in STOP_CASES.items():
        matcher = StopStringMatcher(stops)
        fed = []
        for delta in deltas:
            check = matcher.feed(delta)
            fed.append({"text": check.text, "stop": check.stop})
            if check.stopped:
                break
        out[name] = {
            "stop": stops,
            "deltas": deltas,
            "fed": fed,
            "flush": None if matcher.stopped else matcher.flush(),
        }
    return out


# ops on a 6-block pool with 4-token pages: a prompt and its first output token, a chat turn
# reusing its full pages, a longer unrelated prompt that evicts the least recently used cached
# page, and the first prompt again.
KV_SCRIPT = [
    ("add", "a", list(range(10))),
    ("step", "a", [42]),
    ("free", "a", []),
    ("add", "b", [*range(10), 42, 43, 44]),
    ("step", "b", [45]),
    ("free", "b", []),
    ("add", "c", list(range(90, 103))),
    ("free", "c", []),
    ("add", "d", list(range(10))),
    ("free", "d", []),
]


def _apply(kv: KVCacheManager, tokens: dict, op: str, seq: str, ids: list[int]) -> dict:
    """One op as the engine runs it: add = register, reserve the uncached rest, compute it;
    step = reserve and compute more tokens; free."""
    out: dict = {"op": op, "seq": seq, "tokens": ids}
    if op == "free":
        kv.free(seq)
        return out
    if op == "add":
        out["cached"] = kv.add_sequence(seq, ids)
        tokens[seq] = list(ids)
        ids = ids[out["cached"] :]
    else:
        tokens[seq] += ids
    out["copies"] = [list(c) for c in kv.append(seq, len(ids))]
    kv.commit(seq, tokens[seq])
    out["page_table"] = list(kv.page_table(seq))
    return out


# image spans (positions attended both ways): a prompt's steps, each (new tokens, spans)
SPAN_CASES = {
    "one image inside one step": [(20, [(5, 12)])],
    "two images, then text": [(14, [(2, 6), (8, 12)])],
    "an image at the start of the second step": [(6, []), (10, [(6, 10)])],
    "an image ending the step, across pages": [(3, []), (9, [(4, 12)])],
}


def _span_case(steps: list) -> list[dict]:
    kv = KVCacheManager(num_blocks=16, page_size=4)
    kv.add_sequence("s", list(range(1, 40)))
    out = []
    for num_new, spans in steps:
        kv.append("s", num_new)
        tables = kv.build_arrays([("s", num_new)], spans={"s": spans})
        kv.commit("s", list(range(1, 40)))
        arrays = {name: getattr(tables, name).tolist() for name in PAGE_TABLES}
        out.append({"num_new": num_new, "spans": spans, "arrays": arrays})
    return out


def kv_vectors() -> dict:
    kv = KVCacheManager(num_blocks=6, page_size=4)
    tokens: dict[str, list[int]] = {}
    ops = []
    for op, seq, ids in KV_SCRIPT:
        ops.append({**_apply(kv, tokens, op, seq, ids), "free_order": kv.pool.free_order()})
    spans = {name: _span_case(steps) for name, steps in SPAN_CASES.items()}
    return {"num_blocks": 6, "page_size": 4, "ops": ops, "spans": spans}


CALL = '{"name": "get_weather", "arguments": {"city": "Pa\\"ris", "days": [1, 2]}}'
TOOL_REPLIES = {
    "one call, split": ["<tool", "_call>\n" + CALL[:20], CALL[20:45], CALL[45:] + "\n</tool_call>"],
    "two calls": [
        f"<tool_call>\n{CALL}\n</tool_call>\n<tool_call>\n",
        '{"name": "now", "arguments": 3}',
    ],
    "plain content": ["The weather ", "is fine."],
    "a tag with no call": ["<tool_call>\nnothing", " here"],
}
XML_CALL = (  # Qwen3.5's syntax: values read by their parameters' types (XML_PARAMETERS)
    '<tool_call>\n<function=get_weather>\n<parameter=city>\nPa"ris\n  Ore.\n</parameter>\n'
    "<parameter=days>\n3\n</parameter>\n<parameter=metric>\nTrue\n</parameter>\n"
    "<parameter=hours>\n[9, 12.50]\n</parameter>\n<parameter=note>\nNone\n</parameter>\n"
    "</function>\n</tool_call>\n<tool_call>\n<function=now>\n</function>\n</tool_call>"
)
XML_PARAMETERS = {
    "get_weather": {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": ["integer", "null"]},
            "metric": {"type": "boolean"},
        },
    }
}
XML_REPLIES = {
    "xml calls, split": [XML_CALL[:30], XML_CALL[30:77], XML_CALL[77:200], XML_CALL[200:]],
    "xml calls, whole": [XML_CALL],
    "xml: plain content": ["It is <function=sunny>", " today."],
}
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
]
TOOL_MESSAGES = {
    "tools into a new system message": [{"role": "user", "content": "Weather?"}],
    "tools after the system message": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather?"},
    ],
    "an assistant's calls as blocks": [
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}],
        },
        {"role": "tool", "content": "cold"},
    ],
}


def _without_ids(entries: list[dict]) -> list[dict]:
    return [{k: v for k, v in e.items() if k != "id"} for e in entries]


def _reply_vector(pieces: list[str], syntax: str) -> dict:
    parameters = XML_PARAMETERS if syntax == "xml" else {}
    reply = ToolReply(constrained=False, scanner=SYNTAXES[syntax](parameters))
    deltas = [d for p in pieces for d in reply.feed(p)] + reply.finish()
    for d in deltas:
        d.get("tool_calls", [{}])[0].pop("id", None)
    calls = _without_ids(reply._scanner.calls)
    vector = {"pieces": pieces, "deltas": deltas, "calls": calls}
    return {**vector, "syntax": syntax, "parameters": parameters} if syntax == "xml" else vector


def tool_vectors() -> dict:
    replies = {name: _reply_vector(pieces, "json") for name, pieces in TOOL_REPLIES.items()}
    replies |= {name: _reply_vector(pieces, "xml") for name, pieces in XML_REPLIES.items()}
    prompts = {
        name: {"messages": m, "tools": TOOLS, "rendered": with_generic_tools(m, TOOLS)}
        for name, m in TOOL_MESSAGES.items()
    }
    return {"replies": replies, "prompts": prompts}


FILES = {
    "sampler.json": sampler_vectors,
    "stop.json": stop_vectors,
    "kv.json": kv_vectors,
    "tools.json": tool_vectors,
    "images.json": image_vectors,
    "qwen_vl.json": qwen_vectors,
    "embed_batch.json": embed_vectors,
    "reasoning.json": reasoning_vectors,
}


def render() -> dict[str, str]:
    return {
        name: json.dumps(build(), separators=(",", ":")) + "\n" for name, build in FILES.items()
    }


if __name__ == "__main__":
    VECTORS.mkdir(parents=True, exist_ok=True)
    for name, text in render().items():
        (VECTORS / name).write_text(text)
        print(f"wrote {VECTORS / name} ({len(text)} bytes)")
