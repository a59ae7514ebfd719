"""The compiled artifact directory: its config (`mlcx-config.json`) and weight shards, written
by `mlcx compile` and read by the runtime; the contract between the two."""
