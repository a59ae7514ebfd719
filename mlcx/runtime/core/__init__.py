"""The engine core: `Engine.step` (schedule, run, sample, update, report), its configuration,
the scheduler and the request and sequence records it owns, the data-only scheduler output,
the per-choice output processor and the deltas and completions the engine reports, and the
hooks that observe a step's phases."""
