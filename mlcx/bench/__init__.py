"""`mlcx bench`: measure an artifact's prefill and decode speed on this machine.

Its own package because nothing else in mlcx may depend on it: it drives optional peers
(llama-cpp-python, built from source and cached as a wheel; llama.cpp's Vulkan `llama-bench`,
built by scripts/build-llamacpp-vulkan.sh), probes the host's memory bandwidth, times whole
runs and, for WebGPU plans, single kernels; the compiler and runtime never import it. The CLI
command (mlcx.cli.bench_cmd) only parses options and calls `run_bench`.

By concept, bottom-up: `peers/` (the engines measured beside mlcx, and their builds),
`workloads/` (models and prompts), `measure/` (timers, profiles, probes); at the top, one
module per bench (`run.py`, `embed.py`, `image_encode.py`, `speculative.py`, `serve_compare.py`,
`soak.py`) and `report.py`.
"""
