"""The examples people already have run on mlcx with only the import and the model path
changed: MLC-LLM's Python API page (MLCEngine streaming and not, AsyncMLCEngine batching
completions) and vLLM's basic offline inference. Each is written here from the calls those
docs make, and run as a script would run it; the model's generation config is greedy, so the
answers are checked against mlcx's own greedy generation."""

from __future__ import annotations

import contextlib
import io
import re

from mlcx import LLM

MLC_STREAM = """
from mlcx import MLCEngine

model = MODEL
engine = MLCEngine(model)
for response in engine.chat.completions.create(
    messages=[{"role": "user", "content": "What is the meaning of life?"}],
    model=model,
    stream=True,
):
    for choice in response.choices:
        print(choice.delta.content, end="", flush=True)
print("\\n")
engine.terminate()
"""

MLC_NO_STREAM = """
from mlcx import MLCEngine

model = MODEL
engine = MLCEngine(model)
response = engine.chat.completions.create(
    messages=[{"role": "user", "content": "What is the meaning of life?"}],
    model=model,
    stream=False,
)
print(response)
engine.terminate()
"""

MLC_ASYNC = """
import asyncio
from typing import Dict

from mlcx import AsyncMLCEngine

model = MODEL
prompts = [
    "Write a three-day travel plan to Pittsburgh.",
    "What is the meaning of life?",
    "Name three colours.",
]


async def test_completion():
    async_engine = AsyncMLCEngine(model)
    output_texts: Dict[str, str] = {}

    async def generate_task(prompt: str):
        async for response in await async_engine.completions.create(
            prompt=prompt, model=model, stream=True
        ):
            if response.id not in output_texts:
                output_texts[response.id] = ""
            output_texts[response.id] += response.choices[0].text

    tasks = [asyncio.create_task(generate_task(p)) for p in prompts]
    await asyncio.gather(*tasks)
    for request_id, output in output_texts.items():
        print(f"Output of request {request_id}:\\n{output}\\n")
    async_engine.terminate()


asyncio.run(test_completion())
"""

VLLM_BASIC = """
from mlcx import LLM, SamplingParams

prompts = [
    "Hello, my name is",
    "The president of the United States is",
    "The capital of France is",
    "The future of AI is",
]
sampling_params = SamplingParams(temperature=0.8, top_p=0.95)
llm = LLM(model=MODEL)
outputs = llm.generate(prompts, sampling_params)
print("Generated Outputs:\\n" + "-" * 60)
for output in outputs:
    prompt = output.prompt
    generated_text = output.outputs[0].text
    print(f"Prompt:    {prompt!r}")
    print(f"Output:    {generated_text!r}")
    print("-" * 60)
"""

QUESTION = [{"role": "user", "content": "What is the meaning of life?"}]


def run(example: str, model) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(example.replace("MODEL", repr(str(model))), {"__name__": "__main__"})
    return out.getvalue()


def test_mlc_chat_stream_and_not(greedy_artifact):
    llm = LLM(greedy_artifact)
    [want] = llm.chat(QUESTION, llm.default_params(max_tokens=None))  # chat's default: no limit
    answer = want.outputs[0].text
    assert answer and "None" not in answer
    assert run(MLC_STREAM, greedy_artifact) == answer + "\n\n"
    printed = run(MLC_NO_STREAM, greedy_artifact)
    assert printed.startswith("ChatCompletion(") and repr(answer) in printed


def test_mlc_async_completions(greedy_artifact):
    printed = run(MLC_ASYNC, greedy_artifact)
    outputs = re.findall(r"Output of request (cmpl-\w+):\n(.*?)\n\n", printed, re.S)
    assert len({request_id for request_id, _ in outputs}) == 3
    llm = LLM(greedy_artifact)
    prompts = ["Write a three-day travel plan to Pittsburgh.", "What is the meaning of life?"]
    prompts.append("Name three colours.")
    want = {o.outputs[0].text for o in llm.generate(prompts, llm.default_params(max_tokens=16))}
    assert {text for _, text in outputs} == want  # max_tokens: OpenAI's default of 16


def test_vllm_basic_offline_inference(greedy_artifact):
    printed = run(VLLM_BASIC, greedy_artifact)
    pairs = re.findall(r"Prompt:    (.*)\nOutput:    (.*)\n", printed)
    assert [eval(prompt) for prompt, _ in pairs] == [  # noqa: S307 (our own repr output)
        "Hello, my name is",
        "The president of the United States is",
        "The capital of France is",
        "The future of AI is",
    ]
    assert all(eval(text) for _, text in pairs)  # noqa: S307
