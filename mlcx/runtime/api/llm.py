"""vLLM's offline API in mlcx: load a model, generate for many prompts as one batch.

    llm = LLM("dist/smollm2")                              # or a model, compiled on first use
    for out in llm.generate(["The capital of France is"], SamplingParams(temperature=0.8)):
        print(out.prompt, out.outputs[0].text)
    [reply] = llm.chat([{"role": "user", "content": "Hi"}])  # reply.outputs[0].content ...
    for delta in llm.stream(llm.chat_prompt(messages)): ...  # one request, token by token
    vectors = LLM("dist/bge-small").embed(["a query", "a passage"])  # an embedding model

These drive `Engine.step()` themselves; the OpenAI-shaped engines (MLCEngine,
AsyncMLCEngine) share one engine through mlcx.runtime.api.async_engine instead.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from mlcx.artifact.config import Artifact
from mlcx.runtime.api.embedder import Embedder, EmbedInput
from mlcx.runtime.api.loading import Adapters, open_model
from mlcx.runtime.api.request_output import EmbeddingOutput, EmbeddingRequestOutput, RequestOutput
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.core.engine import Engine
from mlcx.runtime.core.outputs import Completion, Delta
from mlcx.runtime.lora.request import LoraRequest
from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.text.reasoning import (
    ParsedReply,
    ReasoningFormat,
    check_format,
    resolve_format,
)
from mlcx.runtime.vision.prompt import chat_with_images

Prompt = str | list[int]
Messages = list[dict[str, Any]]
Params = SamplingParams | Sequence[SamplingParams] | None
Lora = LoraRequest | str | None
Loras = Lora | Sequence[Lora]


def _prompts(prompts: Prompt | Sequence[Prompt] | Mapping) -> list[Prompt]:
    """One prompt or many; a token prompt as ids or vLLM's {"prompt_token_ids": [...]}."""
    if isinstance(prompts, str | Mapping) or (
        isinstance(prompts, list) and prompts and all(isinstance(t, int) for t in prompts)
    ):
        prompts = [prompts]  # type: ignore[list-item]
    return [_prompt(p) for p in prompts]  # type: ignore[union-attr]


def _prompt(prompt: Any) -> Prompt:
    if isinstance(prompt, Mapping):
        if "prompt_token_ids" in prompt:
            return list(prompt["prompt_token_ids"])
        return prompt["prompt"]
    return prompt


def _each(given: Any, count: int, what: str, one: Any) -> list:
    """`given` for each of `count` prompts: one for all (or None), or a sequence of one each."""
    if given is None or isinstance(given, one):
        return [given] * count
    if len(given) != count:
        raise ValueError(f"{len(given)} {what} for {count} prompts; give one, or one per prompt")
    return list(given)


def _lora(lora: Lora) -> LoraRequest | None:
    return LoraRequest(lora) if isinstance(lora, str) else lora


class LLM:
    def __init__(
        self,
        model: Artifact | str | Path,
        config: EngineConfig | None = None,
        reasoning_format: str = "auto",
        *,
        device: str = "auto",
        lora: Adapters | None = None,
    ):
        """`model`: an artifact directory, or a model to compile on first use (a preset, a
        Hugging Face folder, a .gguf). `reasoning_format`: how replies are split into
        reasoning, content and tool calls (mlcx.runtime.text.reasoning: auto = the model's
        own, none = not at all). `lora`: {name: PEFT folder or GGUF adapter} a request may run
        with (`lora_request=`)."""
        self._reasoning_format = check_format(reasoning_format)
        path = model.path if isinstance(model, Artifact) else model
        opened = open_model(path, device, config, lora, quiet=False)
        self._embedder = opened if isinstance(opened, Embedder) else None
        self._engine = opened if isinstance(opened, Engine) else None
        self._path = path
        self._ids = itertools.count()

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            raise ValueError(
                f"{self._path} is an embedding model: it cannot generate; call LLM.embed"
            )
        return self._engine

    @engine.setter
    def engine(self, engine: Engine) -> None:
        self._engine = engine

    @property
    def tokenizer(self):
        return self.engine.tokenizer

    def get_tokenizer(self):
        """vLLM's name for `tokenizer`."""
        return self.tokenizer

    @property
    def reasoning(self) -> ReasoningFormat:
        return resolve_format(self._reasoning_format, self.tokenizer)

    def reply(self, prompt_ids: list[int]) -> ParsedReply:
        """A parsed reply to `prompt_ids`, to feed the text of its deltas."""
        return ParsedReply(self.reasoning.reply_parser(self.tokenizer, prompt_ids))

    def default_params(self, **given) -> SamplingParams:
        """`given` over the artifact's sampling defaults (see `SamplingParams.with_defaults`)."""
        return SamplingParams.with_defaults(self.engine.artifact.config.sampling, **given)

    def chat_prompt(self, messages: Messages, tools: list[dict] | None = None) -> list[int]:
        """Token ids of the conversation rendered with the model's chat template (what
        `stream` takes to stream a reply)."""
        return self.engine.prompts.chat(messages, tools)

    def chat_inputs(
        self, messages: Messages, tools: list[dict] | None = None
    ) -> tuple[list[int], list[Image.Image]]:
        """Token ids and images of a conversation whose messages may hold image parts
        ({"type": "image", "image": <PIL image>}, runtime.vision.prompt)."""
        config = self.engine.images.config
        return chat_with_images(self.engine.prompts, config, messages, tools)

    def generate(
        self,
        prompts: Prompt | Sequence[Prompt],
        sampling_params: Params = None,
        lora_request: Loras = None,
        images: Sequence[Sequence[Image.Image]] | None = None,
    ) -> list[RequestOutput]:
        """Every prompt (text, token ids or {"prompt_token_ids": ids}) runs in one continuous
        batch; one RequestOutput per prompt, in order, with its n choices. `sampling_params`
        and `lora_request` (an adapter `lora=` loaded, by name or LoraRequest): one for all
        prompts or one per prompt (default: the model's sampling, no adapter). `images[i]`:
        the images of prompt i, one per run of image tokens in it."""
        return self._run(_prompts(prompts), sampling_params, lora_request, images)

    def chat(
        self,
        messages: Messages | Sequence[Messages],
        sampling_params: Params = None,
        lora_request: Loras = None,
        tools: list[dict] | None = None,
    ) -> list[RequestOutput]:
        """One conversation (a list of messages) or many, each answered in the model's chat
        template as one batch; each choice's reply split into reasoning, content and calls."""
        chats = [messages] if messages and isinstance(messages[0], Mapping) else messages
        inputs = [self.chat_inputs(list(chat), tools) for chat in chats]
        images = [found for _, found in inputs] if any(found for _, found in inputs) else None
        prompts: list[Prompt] = [ids for ids, _ in inputs]
        return self._run(prompts, sampling_params, lora_request, images, rendered=True)

    def _run(
        self, prompts: list[Prompt], sampling_params, lora, images, rendered: bool = False
    ) -> list[RequestOutput]:
        """`rendered`: the prompts are conversations' ids, whose text the outputs show."""
        params = _each(sampling_params, len(prompts), "sampling params", SamplingParams)
        params = [p or self.default_params() for p in params]
        loras = [_lora(x) for x in _each(lora, len(prompts), "LoRA requests", LoraRequest | str)]
        outputs: list[RequestOutput] = []
        choices: dict[tuple[str, int], Completion] = {}
        for i, (prompt, p) in enumerate(zip(prompts, params, strict=True)):
            request_id = f"req-{next(self._ids)}"
            given = images[i] if images else ()
            ids = self.engine.add_request(request_id, prompt, p, given, loras[i])
            mine = [Completion(request_id, k, ids, reply=self.reply(ids)) for k in range(p.n)]
            choices.update({(request_id, c.index): c for c in mine})
            text = prompt if isinstance(prompt, str) else None
            if rendered:
                text = self.tokenizer.decode(ids, skip_special_tokens=False)
            outputs.append(RequestOutput(request_id, text, ids, mine))
        while self.engine.has_work():
            for delta in self.engine.step():
                choices[(delta.request_id, delta.index)].add(delta)
        return outputs

    def stream(
        self,
        prompt: Prompt,
        params: SamplingParams | None = None,
        images: Sequence[Image.Image] = (),
        lora_request: Lora = None,
    ) -> Iterator[Delta]:
        """Deltas of one request as they are produced; closing the iterator aborts it."""
        params = params or self.default_params()
        request_id = f"req-{next(self._ids)}"
        self.engine.add_request(request_id, prompt, params, images, _lora(lora_request))
        finished = 0
        try:
            while finished < params.n and self.engine.has_work():
                for delta in self.engine.step():
                    if delta.request_id == request_id:
                        finished += delta.finished
                        yield delta
        finally:
            if finished < params.n:
                self.engine.abort(request_id)
                self.engine.step()

    def embed(
        self, prompts: str | Sequence[EmbedInput], dimensions: int | None = None
    ) -> list[EmbeddingRequestOutput]:
        """One vector per text (or token-id list), in batches, `.outputs.embedding` of each
        (vLLM's shape; `embeddings()` gives them as one array); ValueError for an empty input
        or one past the model's token limit. `dimensions` truncates (Matryoshka models only)
        and renormalizes."""
        texts = [prompts] if isinstance(prompts, str) else list(prompts)
        embedder = self._require_embedder()
        embedder.check_dimensions(dimensions)
        ids = embedder.prepare(texts)
        vectors = embedder.embed_ids(ids, dimensions)
        return [
            EmbeddingRequestOutput(
                t if isinstance(t, str) else None, i, EmbeddingOutput(v.tolist())
            )
            for t, i, v in zip(texts, ids, vectors, strict=True)
        ]

    def embeddings(
        self, prompts: str | Sequence[EmbedInput], dimensions: int | None = None
    ) -> np.ndarray:
        """float32 [len(prompts), dimensions or hidden]: `embed`'s vectors as one array."""
        embedder = self._require_embedder()
        texts = [prompts] if isinstance(prompts, str) else prompts
        return embedder.embed(texts, dimensions)

    def _require_embedder(self) -> Embedder:
        if self._embedder is None:
            raise ValueError(
                f"{self._path} is a text-generation model; LLM.embed needs an embedding model "
                "artifact (compile a BERT or Qwen3-Embedding folder)"
            )
        return self._embedder
