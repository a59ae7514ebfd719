"""The prompt-lookup workload: a chat request to rewrite a ~300-token paragraph with one word
changed, so that most of the answer repeats the prompt (what speculative decoding by prompt
lookup is for: edits, rewrites, quoting code)."""

from __future__ import annotations

PARAGRAPH = (
    "The old lighthouse on the northern cliff had guided ships for more than a century. "
    "Every evening the keeper climbed the narrow spiral stairs, carrying a can of oil and a "
    "small brass lamp, and every morning he wrote a few lines in the logbook about the weather, "
    "the passing vessels and the state of the great lens. In winter the storms came in from "
    "the west, and the waves broke so high against the rocks that salt spray reached the "
    "gallery windows. The keeper's daughter learned to read the sky before she learned to read "
    "books: she knew that a ring around the moon meant rain within two days, and that gulls "
    "flying inland meant the wind would turn. When the lighthouse was finally automated, the "
    "family moved to a house in the village below, but the daughter still walked up the cliff "
    "path each Sunday to polish the brass rail and to look out over the grey water where her "
    "father had watched for so many years. The logbooks are now kept in the town museum, and "
    "visitors can read the careful handwriting that records a hundred years of wind, fog, "
    "wrecks and rescues. On a clear night the beam still sweeps across the bay every ten "
    "seconds, steady and patient, as if someone were still up there keeping watch."
)
INSTRUCTION = "Rewrite this paragraph with one word changed. Keep everything else exactly the same."


def echo_messages() -> list[dict]:
    return [{"role": "user", "content": f"{INSTRUCTION}\n\n{PARAGRAPH}"}]
