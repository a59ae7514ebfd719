"""`mlcx package`: several models compiled for one phone target, laid out for an app.

A package is its own step (not a `compile` option) because an app ships many models at
once: their libraries must be linked together without symbol clashes, and the app needs one
manifest (bundle/mlcx-app-config.json) saying where each model's library symbols, weights and
tokenizer are. docs/packaging.md describes the layout and how iOS/Android apps consume it.
"""
