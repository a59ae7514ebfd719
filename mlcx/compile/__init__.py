"""The workflows that write artifacts: `model.py` (a generative model: weights, library,
tokenizer, config; calls `encoder.py` for a model that sees, `embedding.py` for an embedding
model), `jit.py` (the just-in-time cache of compiled artifacts, keyed by what decides the
output) and `tune.py` (MetaSchedule tuning into a reusable database). Below them: frontends,
passes, targets and the artifact format; above them: the runtime, which reads what they write.
"""
