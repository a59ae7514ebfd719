"""The engine every front door shares (CLI, REST server, benchmarks).

`step()` is the whole loop: schedule, run, sample, update the scheduler, report; each phase
runs inside `hooks.phase(...)` (core/hooks.py: nothing by default, timers when profiled).
Requests and aborts arriving from other threads go through the inbox (core/inbox.py) and are
applied at the start of the next step, so only the thread that calls `step()` touches the
scheduler and the KV cache manager. The scheduler owns request state (tokens, forks,
finishing, KV blocks); the output processor owns what each choice reports (sampling state,
text, stop strings).
"""

from __future__ import annotations

from collections.abc import Sequence as Seq

import numpy as np
from PIL import Image

from mlcx.artifact.config import Artifact
from mlcx.errors import ContextWindowError, MaxTokensTooLargeError, PromptError
from mlcx.runtime.backends.forward_batch import ForwardBatch
from mlcx.runtime.backends.registry import create_runner
from mlcx.runtime.backends.runner import Runner
from mlcx.runtime.core.cache_budget import cache_sizes, step_budget
from mlcx.runtime.core.config import EngineConfig
from mlcx.runtime.core.hooks import (
    DETOKENIZE,
    FORWARD,
    NO_HOOKS,
    PAGE_TABLES,
    SAMPLE,
    SCHEDULE,
    StepHooks,
)
from mlcx.runtime.core.image_inputs import ImageInputs
from mlcx.runtime.core.inbox import Inbox, NewRequest
from mlcx.runtime.core.output_processor import OutputProcessor
from mlcx.runtime.core.outputs import Delta
from mlcx.runtime.core.rope_positions import step_positions
from mlcx.runtime.core.scheduler import Scheduler, SchedulerOutput
from mlcx.runtime.core.sequence import Sequence, SequenceStatus
from mlcx.runtime.core.stats import EngineStats, state_stats
from mlcx.runtime.kv import KVCacheManager
from mlcx.runtime.lora.request import LoraRequest
from mlcx.runtime.lora.slots import LoraSlots
from mlcx.runtime.sample.params import SamplingParams
from mlcx.runtime.sample.sampler import SampleResult
from mlcx.runtime.speculative.proposer import Draft, DraftRequest, ProposalTarget
from mlcx.runtime.speculative.speculator import Speculator
from mlcx.runtime.state import NO_STATES, StateCache
from mlcx.runtime.structured.matcher import ConstraintCompiler
from mlcx.runtime.text.prompt_encoder import PromptEncoder
from mlcx.runtime.text.reasoning import model_format
from mlcx.runtime.text.tokenizer import Tokenizer
from mlcx.runtime.vision.encoder import ImageEncoder


class Engine:
    def __init__(
        self,
        artifact: Artifact | str,
        config: EngineConfig = EngineConfig(),
        hooks: StepHooks = NO_HOOKS,
    ):
        self.artifact = artifact if isinstance(artifact, Artifact) else Artifact(artifact)
        self.config = config
        self.hooks = hooks  # may be swapped between steps (mlcx/bench/measure/step_profile.py)
        art = self.artifact.config
        config.check_artifact(art)
        self.context_window = art.context_window
        self.tokenizer = Tokenizer.from_dir(self.artifact.path)
        self.prompts = PromptEncoder(self.tokenizer)
        self.sizes = cache_sizes(art, config)
        self.num_blocks = self.sizes.num_blocks
        slots = self.sizes.num_state_slots
        self.runner: Runner = create_runner(self.artifact, self.num_blocks, config.device, slots)
        self.lora = LoraSlots.load(self.artifact, config.lora, self.runner)  # adapters by name
        self.kv = KVCacheManager(self.num_blocks, art.page_size, config.enable_prefix_caching)
        budget = step_budget(config, art.prefill_chunk)
        self.images = ImageInputs(ImageEncoder.for_artifact(self.artifact.path), budget)
        states = StateCache(self.kv, slots, config.max_batch) if slots else NO_STATES
        self.scheduler = Scheduler(self.kv, config.max_batch, budget, art.model.kv_window, states)
        # the format the model writes its replies in; its markers may be special tokens
        self.reasoning = model_format(self.tokenizer)
        self.outputs = OutputProcessor(self.tokenizer, self.reasoning.keeps_special_tokens)
        self.constraints = ConstraintCompiler(self.tokenizer)
        self.speculator = self._speculator()
        self.inbox = Inbox(config.max_waiting)
        # Taken by `step` once scheduled and once done: other threads read this, not `stats()`,
        # and see the batch that a long model step is running.
        self.snapshot = self.stats()

    def _speculator(self) -> Speculator | None:
        if self.config.speculative is None:
            return None
        target = ProposalTarget(
            self.tokenizer,
            self.artifact.config.model.vocab_size,
            self.context_window,
            self.config.device,
        )
        return Speculator.from_config(self.config.speculative, target)

    # -- requests (any thread) ------------------------------------------------------------
    def tokenize_prompt(self, prompt: str | list[int]) -> list[int]:
        return self.prompts.tokenize(prompt)

    def check_fits(self, prompt_len: int, max_tokens: int | None) -> int:
        """The number of tokens the request may generate; raises if it cannot fit."""
        window = min(self.context_window, self.num_blocks * self.artifact.config.page_size)
        if prompt_len == 0:
            raise PromptError("the prompt is empty; give at least one token")
        if prompt_len >= window:
            raise ContextWindowError(
                f"the prompt has {prompt_len} tokens but the context window is {window}; "
                "shorten the prompt"
            )
        if max_tokens is not None and prompt_len + max_tokens > window:
            raise MaxTokensTooLargeError(
                f"the prompt ({prompt_len} tokens) plus max_tokens ({max_tokens}) exceeds the "
                f"context window of {window} tokens; lower max_tokens to at most "
                f"{window - prompt_len}"
            )
        return max_tokens if max_tokens is not None else window - prompt_len

    def add_request(
        self,
        request_id: str,
        prompt: str | list[int],
        params: SamplingParams,
        images: Seq[Image.Image] = (),
        lora: LoraRequest | None = None,
    ) -> list[int]:
        """Validate and queue a request; returns its prompt token ids. A constraint is
        compiled here: one llguidance refuses raises InvalidFieldError naming its param.
        `images`: one per run of image tokens in the prompt, in order; `lora`: the adapter."""
        ref = self.lora.ref(lora)
        prompt_ids = self.tokenize_prompt(prompt)
        self.images.check(prompt_ids, images)
        max_new = self.check_fits(len(prompt_ids), params.max_tokens)
        self.scheduler.states.check_choices(params.n)
        params.validate_vocab(self.tokenizer.vocab_size)
        constraint = self.constraints.compile(params.constraint) if params.constraint else None
        request = NewRequest(request_id, prompt_ids, params, max_new, constraint, (*images,), ref)
        self.inbox.add(request, self.scheduler.requests, lambda: len(self.scheduler.waiting))
        return prompt_ids

    def abort(self, request_id: str) -> None:
        self.inbox.abort(request_id)

    def request_ids(self) -> list[str]:
        """Requests the scheduler holds (queued adds not included)."""
        return list(self.scheduler.requests)

    # -- the loop (one thread) ------------------------------------------------------------
    def has_work(self) -> bool:
        return not self.inbox.empty() or self.scheduler.has_work()

    def step(self) -> list[Delta]:
        deltas = self._apply_inbox()
        drafts = self._drafts()
        with self.hooks.phase(SCHEDULE):
            plan = self.scheduler.schedule({i: d.tokens for i, d in drafts.items()})
        self.snapshot = self.stats()
        if plan.scheduled:
            batch = self.lora.attach(self._batch(plan), plan, self.scheduler.requests)
            with self.hooks.phase(FORWARD):
                logits = self.runner.forward(batch)
            deltas += self._apply(plan, logits, drafts)
            self.snapshot = self.stats()
        if self.speculator is not None:  # the draft model's pages of finished sequences
            self.speculator.release({seq.seq_id for seq in self.scheduler.running})
        return deltas

    def _apply(
        self, plan: SchedulerOutput, logits: np.ndarray, drafts: dict[int, Draft]
    ) -> list[Delta]:
        """Sample (and verify drafts), update the scheduler, report the deltas."""
        items = [item for item in plan.scheduled for _ in item.choices]
        proposals = [drafts[i.seq.seq_id].probs if i.draft else None for i in items]
        with self.hooks.phase(SAMPLE):
            results = self.outputs.sample(logits, plan.samples, plan.drafts, proposals)
        tokens = [[r.token_id for r in rs] for rs in results]
        if self.speculator is not None:
            self.speculator.record([i.seq.seq_id for i in items], plan.drafts, tokens)
        before = [len(item.seq.token_ids) for item in items]
        with self.hooks.phase(SCHEDULE):
            seqs = self.scheduler.update_from_output(plan, tokens)
        # a stop token or max_tokens may end a drafted sequence before its last kept token
        results = [
            rs[: len(seq.token_ids) - n] if item.draft else rs
            for rs, seq, n, item in zip(results, seqs, before, items, strict=True)
        ]
        return self._report(seqs, results)

    def _drafts(self) -> dict[int, Draft]:
        if self.speculator is None:
            return {}
        requests = []
        for seq, room in self.scheduler.draftable():
            if self.outputs.can_draft(seq.request_id, seq.index):
                state = self.outputs.state(seq.request_id, seq.index)
                requests.append(DraftRequest(seq.seq_id, seq.token_ids, room, state))
        return self.speculator.propose(requests, len(self.scheduler.running))

    def _batch(self, plan: SchedulerOutput) -> ForwardBatch:
        ids = [t for item in plan.scheduled for t in item.input_ids]
        # Verifying drafts runs as decode rows, one per token over its own prefix, in the
        # same row order: the decode attention kernel splits a long context over the threads,
        # where the prefill kernel gives a few queries of one sequence to one thread per head.
        rows_per_token = plan.verifies_every_token
        batch = [(s.seq.seq_id, s.num_new) for s in plan.scheduled]
        images_of = lambda seq: self.scheduler.requests[seq.request_id].images  # noqa: E731
        images = self.images.step(plan, images_of)
        spans = images.spans if images else None
        with self.hooks.phase(PAGE_TABLES):
            tables = self.kv.build_arrays(batch, row_per_token=rows_per_token, spans=spans)
        rows = None if rows_per_token else plan.logit_rows()
        tokens = np.array(ids, dtype=np.int32)
        state = {"state_slots": plan.state.slots, "state_copies": plan.state.copies}
        if self.artifact.config.model.mrope_sections:
            state["rope_positions"] = step_positions(plan, images_of)
        if images is not None:
            return ForwardBatch(
                tokens, tables, plan.copies, images.logit_rows, images.rows, images.embeds, **state
            )
        return ForwardBatch(tokens, tables, plan.copies, rows, **state)

    def _report(self, seqs: list[Sequence], results: list[list[SampleResult]]) -> list[Delta]:
        with self.hooks.phase(DETOKENIZE):
            deltas = self.outputs.process(seqs, results)
        for seq, delta in zip(seqs, deltas, strict=True):
            if delta.finished and not seq.finished:  # a stop string, or a constraint completed
                self.scheduler.finish(seq, SequenceStatus.FINISHED_STOPPED)
        return deltas

    def _apply_inbox(self) -> list[Delta]:
        deltas = []
        for item in self.inbox.take():
            if isinstance(item, NewRequest):
                self._add_now(item)
            else:
                aborted = self.scheduler.abort_request(item.request_id)
                deltas += self.outputs.abort(item.request_id, aborted)
        return deltas

    def _add_now(self, req: NewRequest) -> None:
        params = req.params
        eos = () if params.ignore_eos else self.tokenizer.eos_token_ids
        stop_ids = [*params.stop_token_ids, *eos]
        images = self.images.encode(req.prompt_ids, req.images)
        self.scheduler.add_request(
            req.request_id, req.prompt_ids, req.max_new_tokens, params.n, stop_ids, images, req.lora
        )
        self.outputs.add_request(req.request_id, req.prompt_ids, params, req.constraint)

    def stats(self) -> EngineStats:
        counts = self.scheduler.stats
        return EngineStats(
            running=len(self.scheduler.running),
            waiting=len(self.scheduler.waiting) + self.inbox.queued,
            kv_usage=self.kv.usage(),
            prefix_hit_tokens=counts.prefix_hit_tokens,
            prefix_query_tokens=counts.prefix_query_tokens,
            prompt_tokens=counts.prompt_tokens,
            generated_tokens=counts.generated_tokens,
            computed_tokens=counts.computed_tokens,
            preemptions=counts.preemptions,
            **self._spec_stats(),
            **self._memory_stats(),
            **state_stats(self.scheduler.states.stats()),
        )

    def _memory_stats(self) -> dict[str, int | None]:
        memory = self.runner.memory()
        return {
            "weights_bytes": memory.weights,
            "kv_pool_bytes": memory.kv_pages,
            "step_pool_bytes": memory.step_pool,
            "state_pool_bytes": memory.states if self.artifact.config.state_tensors else None,
        }

    def _spec_stats(self) -> dict[str, int]:
        if self.speculator is None:
            return {}
        spec = self.speculator.stats
        return {
            "spec_proposed_tokens": spec.proposed_tokens,
            "spec_accepted_tokens": spec.accepted_tokens,
            "spec_off_steps": spec.off_steps,
        }
