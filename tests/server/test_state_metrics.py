"""/metrics of a hybrid model (tests/support/state_model.py) served by the real app: state
slots in use while a stream runs and back to 0 once its client goes away, and a second chat
turn counted as resumed from the first turn's saved state."""

from __future__ import annotations

import pytest

from mlcx.runtime.core.config import EngineConfig
from tests.server.conftest import serving
from tests.server.test_metrics_and_health import scrape, value
from tests.support.state_model import reference_greedy, registered, write_artifact

PROMPT = [3, 14, 15, 9, 26, 5, 35, 8, 9, 7, 9, 32, 38, 4, 6, 26, 43]


def words(tokens: list[int]) -> list[str]:
    """The text of `tokens`, word by word (the state model's tokenizer: one word a token)."""
    return [f"t{t}" for t in tokens]


@pytest.fixture(scope="module")
def state_artifact(tmp_path_factory):
    with registered():
        yield write_artifact(tmp_path_factory.mktemp("state-model"))


def test_a_disconnected_stream_gives_its_state_slot_back(state_artifact):
    with serving(state_artifact, EngineConfig(max_batch=2), step_delay_s=0.02) as s:
        idle = scrape(s.url)
        assert value(idle, "mlcx_state_slots_in_use") == 0
        assert value(idle, "mlcx_state_pool_bytes") == s.engine.sizes.state_bytes
        client = s.client(max_retries=0)
        stream = client.completions.create(
            model=s.model, prompt=PROMPT, max_tokens=200, stream=True, temperature=0
        )
        for i, _ in enumerate(stream):
            if i == 3:
                break
        assert value(scrape(s.url), "mlcx_state_slots_in_use") == 1
        stream.close()
        s.wait_idle()
        assert value(scrape(s.url), "mlcx_state_slots_in_use") == 0


def test_a_second_turn_is_counted_as_resumed_from_the_saved_state(state_artifact):
    with serving(state_artifact, EngineConfig(max_batch=2)) as s:
        client = s.client(max_retries=0)
        reply = reference_greedy(PROMPT, 12)
        first = client.completions.create(
            model=s.model, prompt=PROMPT, max_tokens=12, temperature=0
        )
        assert first.choices[0].text.split() == words(reply)
        second_prompt = PROMPT + reply + [5, 6, 7]
        second = client.completions.create(
            model=s.model, prompt=second_prompt, max_tokens=12, temperature=0
        )
        assert second.choices[0].text.split() == words(reference_greedy(second_prompt, 12))
        metrics = scrape(s.url)
        hits = "mlcx_state_checkpoint_hits"
        assert value(metrics, hits, f"{hits}_total") == 1
        skipped = "mlcx_prefix_cache_hits_without_state"
        assert value(metrics, skipped, f"{skipped}_total") == 0
        assert value(metrics, "mlcx_state_checkpoints") >= 2
