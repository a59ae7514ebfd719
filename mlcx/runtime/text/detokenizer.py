"""Streaming token ids to text, one token at a time.

Decoding each token on its own is wrong twice over: a byte-level token can end in the middle of a
UTF-8 character, and SentencePiece decoders strip the leading space of the first token they see.
So each step decodes a short window of tokens, `ids[prefix_offset:]`, and emits only what it adds
to the text of `ids[prefix_offset:read_offset]` (the technique vLLM uses). The window starts on
the last few prompt tokens, so the first output word keeps the space that separates it from the
prompt (" Paris" after "The capital of France is"), and it restarts only where the text so far
ended on a whole character. The concatenation of every `push` and the final `flush` is the text
the output adds to the prompt: `decode(prompt + output)` minus `decode(prompt)` (with no prompt,
`decode(output)`).

Text ending in U+FFFD is held back: it is an incomplete character that a later token may finish.
Only `flush`, at the end of generation, gives it out, since then the bytes really were invalid.
"""

from __future__ import annotations

from collections.abc import Sequence

from mlcx.runtime.text.tokenizer import Tokenizer

_REPLACEMENT = "\ufffd"


class IncrementalDetokenizer:
    """Text deltas for a stream of output ids that continue `prompt_ids`."""

    PROMPT_CONTEXT = 5  # prompt tokens decoded with the output (enough for a leading space)

    def __init__(
        self,
        tokenizer: Tokenizer,
        prompt_ids: Sequence[int] = (),
        skip_special_tokens: bool = True,
    ) -> None:
        self.prompt_ids = tuple(prompt_ids)
        self._tokenizer = tokenizer
        self._skip_special_tokens = skip_special_tokens
        self._ids: list[int] = list(self.prompt_ids[-self.PROMPT_CONTEXT :])
        self._num_context = len(self._ids)
        self._prefix_offset = 0
        self._read_offset = self._num_context

    @property
    def output_ids(self) -> tuple[int, ...]:
        return tuple(self._ids[self._num_context :])

    def push(self, token_id: int) -> str:
        """Add one output token; return the text it completes (possibly "")."""
        self._ids.append(token_id)
        prefix_text, new_text = self._window_texts()
        if len(new_text) <= len(prefix_text) or new_text.endswith(_REPLACEMENT):
            return ""
        self._prefix_offset = self._read_offset
        self._read_offset = len(self._ids)
        return new_text[len(prefix_text) :]

    def flush(self) -> str:
        """The text still held back; call once, when generation ends."""
        prefix_text, new_text = self._window_texts()
        self._prefix_offset = self._read_offset = len(self._ids)
        return new_text[len(prefix_text) :]

    def _window_texts(self) -> tuple[str, str]:
        prefix = self._ids[self._prefix_offset : self._read_offset]
        window = self._ids[self._prefix_offset :]
        return self._decode(prefix), self._decode(window)

    def _decode(self, ids: list[int]) -> str:
        if not ids:
            return ""
        return self._tokenizer.decode(ids, skip_special_tokens=self._skip_special_tokens)
