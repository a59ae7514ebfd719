#!/usr/bin/env bash
# Builds the serving peer of `mlcx bench serve --against llama-server`: llama.cpp's CPU backend
# (llama-server, llama-bench; llama-quantize, which makes K-quant files; llama-mtmd-cli, the
# image-encoder peer of `mlcx bench image`) from the llama.cpp that llama-cpp-python's PyPI sdist vendors,
# tuned for this CPU (GGML_NATIVE, or the extensions in GGML_CPU_FLAGS). The binaries are cached under $MLCX_CACHE (default
# ~/.cache/mlcx)/peers/llama.cpp-cpu-VERSION/bin; a second run does nothing. About 15-25 min on
# 2 cores. Prints the folder holding the binaries on its last line.
set -euo pipefail

VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
CACHE="${MLCX_CACHE:-$HOME/.cache/mlcx}"
PREFIX="$CACHE/peers/llama.cpp-cpu-$VERSION"
JOBS="${JOBS:-$(nproc)}"

if [ -x "$PREFIX/bin/llama-bench" ] && [ -x "$PREFIX/bin/llama-server" ] && [ -x "$PREFIX/bin/llama-quantize" ] \
  && [ -x "$PREFIX/bin/llama-mtmd-cli" ]; then
  echo "$PREFIX/bin"
  exit 0
fi
command -v cmake >/dev/null && command -v g++ >/dev/null || {
  echo "build-llamacpp-cpu: needs cmake and g++ (apt-get install cmake g++)" >&2
  exit 1
}

# shellcheck source=llamacpp-source.sh
source "$(dirname "$0")/llamacpp-source.sh"

BUILD="$WORK/build-cpu-$VERSION"
# GGML_CPU_FLAGS: mlcx passes this CPU's extensions without AMX (mlcx/bench/peers/llamacpp_flags.py)
# shellcheck disable=SC2086
cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF ${GGML_CPU_FLAGS:--DGGML_NATIVE=ON} \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DBUILD_SHARED_LIBS=OFF >&2
cmake --build "$BUILD" -j "$JOBS" --target llama-bench llama-server llama-quantize llama-mtmd-cli >&2
mkdir -p "$PREFIX/bin"
cp "$BUILD/bin/llama-bench" "$BUILD/bin/llama-server" "$BUILD/bin/llama-quantize" \
  "$BUILD/bin/llama-mtmd-cli" "$PREFIX/bin/"
echo "$PREFIX/bin"
