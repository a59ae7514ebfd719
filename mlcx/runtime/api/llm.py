"""The Python API: load an artifact and generate, streaming or not, one prompt or many.

    llm = LLM("dist/smollm2")
    [c] = llm.generate(["The capital of France is"], SamplingParams.greedy(max_tokens=16))
    for delta in llm.stream(llm.chat_prompt([{"role": "user", "content": "Hi"}])): ...
    c.reasoning_content, c.content, c.tool_calls  # the reply split as the model writes it
    vectors = LLM("dist/bge-small").embed(["a query", "a passage"])  # an embedding artifact

These helpers drive `Engine.step()` themselves; a server shares one engine through
mlcx.runtime.api.async_engine instead.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import numpy as np
from PIL import Image

from mlcx.artifact.config import Artifact
from mlcx.artifact.embedding_config import EMBED_TASK, artifact_task
from mlcx.runtime.api.embedder import Embedder, EmbedInput
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.core.engine import Engine
from mlcx.runtime.core.outputs import Completion, Delta
from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.text.reasoning import ParsedReply, ReasoningFormat, check_format, resolve_format
from mlcx.runtime.vision.prompt import chat_with_images

Prompt = str | list[int]


class LLM:
    def __init__(
        self,
        artifact: Artifact | str,
        config: EngineConfig = EngineConfig(),
        reasoning_format: str = "auto",
    ):
        """`reasoning_format`: how replies are split into reasoning, content and tool calls
        (mlcx.runtime.text.reasoning: auto = the model's own, none = not at all)."""
        self._reasoning_format = check_format(reasoning_format)
        path = artifact.path if isinstance(artifact, Artifact) else artifact
        self._embedder = Embedder(path) if artifact_task(path) == EMBED_TASK else None
        self._engine = None if self._embedder is not None else Engine(artifact, config)
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

    def embed(self, texts: str | Sequence[EmbedInput], dimensions: int | None = None) -> np.ndarray:
        """float32 [len(texts), dimensions or hidden]: one vector per text (or token-id list),
        in batches; ValueError for an empty input or one past the model's token limit.
        `dimensions` truncates (Matryoshka models only) and renormalizes."""
        if self._embedder is None:
            raise ValueError(
                f"{self._path} is a text-generation model; LLM.embed needs an embedding model "
                "artifact (compile a BERT or Qwen3-Embedding folder)"
            )
        return self._embedder.embed([texts] if isinstance(texts, str) else texts, dimensions)

    @property
    def tokenizer(self):
        return self.engine.tokenizer

    @property
    def reasoning(self) -> ReasoningFormat:
        return resolve_format(self._reasoning_format, self.tokenizer)

    def reply(self, prompt_ids: list[int]) -> ParsedReply:
        """A parsed reply to `prompt_ids`, to feed the text of its deltas."""
        return ParsedReply(self.reasoning.reply_parser(self.tokenizer, prompt_ids))

    def default_params(self, **given) -> SamplingParams:
        """`given` over the artifact's sampling defaults (see `SamplingParams.with_defaults`)."""
        return SamplingParams.with_defaults(self.engine.artifact.config.sampling, **given)

    def chat_prompt(self, messages: list[dict]) -> list[int]:
        """Token ids of the conversation rendered with the model's chat template."""
        return self.engine.prompts.chat(messages)

    def chat_inputs(self, messages: list[dict]) -> tuple[list[int], list[Image.Image]]:
        """Token ids and images of a conversation whose messages may hold image parts
        ({"type": "image", "image": <PIL image>}, runtime.vision.prompt)."""
        return chat_with_images(self.engine.prompts, self.engine.images.config, messages)

    def generate(
        self,
        prompts: Sequence[Prompt],
        params: SamplingParams | None = None,
        images: Sequence[Sequence[Image.Image]] | None = None,
    ) -> list[list[Completion]]:
        """All prompts run as one continuous batch; returns the n choices of each prompt,
        each split into reasoning, content and tool calls as well.
        `images[i]`: the images of prompt i, one per run of image tokens in it."""
        params = params or self.default_params()
        reasoning = self.reasoning
        order, done = [], {}
        for i, prompt in enumerate(prompts):
            request_id = f"req-{next(self._ids)}"
            given = images[i] if images else ()
            prompt_ids = self.engine.add_request(request_id, prompt, params, given)
            order.append(request_id)
            for index in range(params.n):
                parser = reasoning.reply_parser(self.tokenizer, prompt_ids)
                done[(request_id, index)] = Completion(
                    request_id, index, prompt_ids, reply=ParsedReply(parser)
                )
        while self.engine.has_work():
            for delta in self.engine.step():
                done[(delta.request_id, delta.index)].add(delta)
        return [[done[(rid, i)] for i in range(params.n)] for rid in order]

    def stream(
        self,
        prompt: Prompt,
        params: SamplingParams | None = None,
        images: Sequence[Image.Image] = (),
    ) -> Iterator[Delta]:
        """Deltas of one request as they are produced; closing the iterator aborts it."""
        params = params or self.default_params()
        request_id = f"req-{next(self._ids)}"
        self.engine.add_request(request_id, prompt, params, images)
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
