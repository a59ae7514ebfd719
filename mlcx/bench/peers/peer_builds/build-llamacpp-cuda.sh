#!/usr/bin/env bash
# Builds the CUDA peer of `mlcx bench --against llama.cpp-cuda`: llama.cpp's CUDA backend
# (llama-bench only) from the llama.cpp that llama-cpp-python's PyPI sdist vendors, the same
# source as the cpu and vulkan peers. Built on a machine with nvcc and no GPU, for one arch
# (CUDA_ARCH, default 90: H100/H200) with CUDA graphs on; ggml is linked in statically and the
# binary stripped, so it needs only the driver, libcudart.so.13 and libcublas.so.13 where it
# runs. Also writes llama-bench.xz beside it: the file scripts/gpu-bench.sh carries to a GPU
# machine. Cached under $MLCX_CACHE (default ~/.cache/mlcx)/peers/llama.cpp-cuda-VERSION/bin
# (its arch in bin/arch); a second run for the same arch does nothing. About 35 minutes on
# 2 Zen 4 cores with JOBS=2 (sm_90 alone, 279 steps).
# Prints the folder holding the binary on its last line.
set -euo pipefail

VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
CACHE="${MLCX_CACHE:-$HOME/.cache/mlcx}"
ARCH="${CUDA_ARCH:-90}"
PREFIX="$CACHE/peers/llama.cpp-cuda-$VERSION"
JOBS="${JOBS:-$(nproc)}"

if [ -x "$PREFIX/bin/llama-bench" ] && [ "$(cat "$PREFIX/bin/arch" 2>/dev/null)" = "$ARCH" ]; then
  echo "$PREFIX/bin"
  exit 0
fi
for tool in cmake g++ nvcc; do
  command -v "$tool" >/dev/null || {
    echo "build-llamacpp-cuda: needs $tool on PATH (nvcc: the CUDA toolkit)" >&2
    exit 1
  }
done

# shellcheck source=llamacpp-source.sh
source "$(dirname "$0")/llamacpp-source.sh"

# cuBLAS: ggml-cuda links it. A toolkit without it (nvcc alone) gets the headers and library
# from PyPI's nvidia-cublas wheel of the same major version (13: libcublas.so.13, which the GPU
# machine's CUDA 13 toolkit or its nvidia-cublas package provides at run time).
CUBLAS=()
NVCC_ROOT="$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")"
if ! find "$NVCC_ROOT" /usr/local/cuda/ -name cublas_v2.h 2>/dev/null | grep -q .; then
  CUBLAS_DIR="$CACHE/peers/src/nvidia-cublas-${CUBLAS_VERSION:-13.0.2.14}"
  if [ ! -f "$CUBLAS_DIR/nvidia/cu13/include/cublas_v2.h" ]; then
    python3 -m pip download --quiet --no-deps --only-binary=:all: --platform manylinux_2_27_x86_64 \
      "nvidia-cublas==${CUBLAS_VERSION:-13.0.2.14}" -d "$CUBLAS_DIR.whl" >&2
    mkdir -p "$CUBLAS_DIR" && (cd "$CUBLAS_DIR" && unzip -q -o "$CUBLAS_DIR".whl/*.whl)
  fi
  LIB="$CUBLAS_DIR/nvidia/cu13/lib"
  ln -sf libcublas.so.13 "$LIB/libcublas.so" && ln -sf libcublasLt.so.13 "$LIB/libcublasLt.so"
  INC="$CUBLAS_DIR/nvidia/cu13/include"
  CUBLAS=(-DCUDA_cublas_LIBRARY="$LIB/libcublas.so" -DCUDA_cublasLt_LIBRARY="$LIB/libcublasLt.so"
    -DCMAKE_CUDA_FLAGS="-I$INC" -DCMAKE_CXX_FLAGS="-I$INC" -DCMAKE_C_FLAGS="-I$INC")
fi

BUILD="$WORK/build-cuda-$VERSION-sm$ARCH"

# The driver library (libcuda.so.1) comes with the GPU's driver; a machine without a GPU has
# none, and this toolkit ships no stub. ggml-cuda calls a few driver functions (virtual memory
# for its pool): a stub that defines them lets the link finish; the real one loads on the GPU.
DRIVER=()
if ! find "$NVCC_ROOT" /usr/local/cuda/ /usr/lib/x86_64-linux-gnu -name 'libcuda.so*' 2>/dev/null | grep -q .; then
  STUB="$BUILD-stub"
  mkdir -p "$STUB"
  grep -rhoE '\bcu[A-Z][A-Za-z0-9_]*\(' "$SRC/ggml/src/ggml-cuda" | tr -d '(' | sort -u |
    sed 's/.*/int &(void) { return 999; }/' >"$STUB/stub.c"
  cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$STUB/libcuda.so" "$STUB/stub.c"
  DRIVER=(-DCUDA_cuda_driver_LIBRARY="$STUB/libcuda.so")
fi
GENERATOR=()
command -v ninja >/dev/null && GENERATOR=(-G Ninja)
cmake -S "$SRC" -B "$BUILD" "${GENERATOR[@]}" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
  -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DGGML_CUDA_GRAPHS=ON -DGGML_CUDA_NCCL=OFF \
  -DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
  -DBUILD_SHARED_LIBS=OFF "${CUBLAS[@]}" "${DRIVER[@]}" >&2
cmake --build "$BUILD" -j "$JOBS" --target llama-bench >&2
mkdir -p "$PREFIX/bin"
cp "$BUILD/bin/llama-bench" "$PREFIX/bin/"
strip "$PREFIX/bin/llama-bench"
xz -T1 -9 -c "$PREFIX/bin/llama-bench" >"$PREFIX/bin/llama-bench.xz"
echo "$ARCH" >"$PREFIX/bin/arch"
ls -l "$PREFIX/bin" >&2
echo "$PREFIX/bin"
