#!/usr/bin/env bash
# Issue 26's GPU run, on a bare NVIDIA machine (the device tool's; nothing installed, nothing
# reachable): mlcx vs llama-bench CUDA for the default model and the 1B and 8B random shapes,
# decode/prefill tok/s, ratios, fraction of the HBM bound, greedy tokens vs the cpu artifact,
# kernel launches per decode step. Inside one 10-minute call.
#
# First, on the CPU machine, in the repo root (once; minutes):
#   scripts/build-llamacpp-cuda.sh          # llama-bench for sm_90 (~35 min on 2 cores)
#   .venv/bin/python scripts/gpu_bench_pack.py   # writes .gpu/p1 .. .gpu/pN, prints the calls
# Then one device call per part, each right after the last (the machine keeps earlier parts
# only while warm, 30 s), all with this command:
#   run(command="bash scripts/gpu-bench.sh", carry=[".gpu/pK"], timeout_s=600)
# Calls before the last say which parts are staged; the last one runs everything.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 scripts/gpu_bench_device.py "$@"
