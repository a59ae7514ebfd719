"""Constraints compiled by llguidance against the engine's tokenizer; one matcher per sequence.

llguidance rather than xgrammar (MLC-LLM's choice): one abi3 wheel with no dependencies, where
xgrammar pulls torch, transformers and triton on Linux (issue 15). A constraint is compiled once
per (kind, spec) into a template matcher, checked when the request is added (so a schema or
grammar llguidance refuses is an InvalidFieldError naming the constraint's `param`, never an
error in a step), and each sequence gets a deep copy of the template.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import llguidance
import numpy as np

from mlcx.errors import InvalidFieldError
from mlcx.runtime.structured.constraint import Constraint
from mlcx.runtime.text.tokenizer import Tokenizer

# Whitespace between JSON tokens is fixed (", " and ": "), as a model writes JSON anyway:
# flexible whitespace would let a model emit blanks forever and never close the object.
JSON_OPTIONS = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
_CACHE_SIZE = 64


def grammar_text(constraint: Constraint) -> str:
    """The llguidance grammar (its JSON form) of a constraint, not yet checked."""
    kind, spec = constraint.kind, constraint.spec
    matcher = llguidance.LLMatcher
    if kind in ("json_object", "json_schema"):
        schema = constraint.schema()
        try:
            return matcher.grammar_from_json_schema(schema, overrides=JSON_OPTIONS)
        except ValueError as err:
            raise _refused(constraint, str(err)) from None
    if kind == "regex":
        return matcher.grammar_from_regex(spec)
    return matcher.grammar_from_lark(spec)


def _refused(constraint: Constraint, reason: str) -> InvalidFieldError:
    what = {"json_object": "JSON object", "json_schema": "JSON schema"}.get(constraint.kind)
    message = f"{constraint.param}: invalid {what or constraint.kind}: {one_line(reason)}"
    return InvalidFieldError(message, constraint.param)


def one_line(message: str) -> str:
    """llguidance's multi-line diagnostics as one line: the first line and the error lines."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    if not lines:
        return "rejected by llguidance"
    errors = [line.removeprefix("error:").strip() for line in lines[1:] if line.startswith("error")]
    return "; ".join([lines[0].rstrip(":"), *errors])


class ConstraintMatcher:
    """Where one sequence stands in its constraint: the tokens allowed next, fed each token."""

    def __init__(self, matcher: llguidance.LLMatcher) -> None:
        self.ll = matcher

    def advance(self, token_id: int) -> None:
        """Feed the sampled token. A token the mask did not allow (only possible when the
        caller skipped the mask) leaves llguidance in an error state, which counts as done."""
        self.ll.consume_token(token_id)

    @property
    def done(self) -> bool:
        """True once the constraint admits nothing but EOS (complete, or in error)."""
        return self.ll.is_stopped()

    def fill(self, bitmask: np.ndarray, row: int) -> None:
        """Write the allowed-token bits (token t: bit t % 32 of word t // 32) into a row."""
        target = bitmask[row]
        self.ll.unsafe_compute_mask_ptr(target.ctypes.data, target.nbytes)


@dataclass(frozen=True, eq=False)
class CompiledConstraint:
    constraint: Constraint
    template: llguidance.LLMatcher  # never fed a token: only copied

    def matcher(self) -> ConstraintMatcher:
        return ConstraintMatcher(self.template.deep_copy())


class ConstraintCompiler:
    """Compiles constraints for one tokenizer; safe to call from any thread."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self._tokenizer = tokenizer
        self._ll_tokenizer: llguidance.LLTokenizer | None = None
        self._cache: OrderedDict[tuple[str, str], CompiledConstraint] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def ll_tokenizer(self) -> llguidance.LLTokenizer:
        """Built on first use: engines that never see a constraint never pay for it."""
        with self._lock:
            if self._ll_tokenizer is None:
                tok = self._tokenizer
                eos = list(tok.eos_token_ids) or None
                self._ll_tokenizer = llguidance.LLTokenizer(
                    tok.backend.to_str(), n_vocab=tok.vocab_size, eos_token=eos
                )
            return self._ll_tokenizer

    def compile(self, constraint: Constraint) -> CompiledConstraint:
        """The compiled constraint; InvalidFieldError naming `constraint.param` if refused."""
        key = (constraint.kind, constraint.spec)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return CompiledConstraint(constraint, self._cache[key].template)
        compiled = CompiledConstraint(constraint, self._template(constraint))
        with self._lock:
            self._cache[key] = compiled
            if len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        return compiled

    def _template(self, constraint: Constraint) -> llguidance.LLMatcher:
        grammar = grammar_text(constraint)
        tokenizer = self.ll_tokenizer
        # Constructing a matcher never raises: a refused grammar leaves it in an error state.
        matcher = llguidance.LLMatcher(tokenizer, grammar, log_level=0)
        if matcher.is_error():
            raise _refused(constraint, matcher.get_error())
        return matcher
