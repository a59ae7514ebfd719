#!/usr/bin/env bash
# Builds the GPU peer of `mlcx bench --against llama.cpp-vulkan`: llama.cpp's Vulkan backend
# (llama-bench, llama-server), from the llama.cpp that llama-cpp-python's PyPI sdist vendors.
# The binaries are cached under $MLCX_CACHE (default ~/.cache/mlcx)/peers/; a second run does
# nothing. Needs root (or sudo) once for the Debian packages. About 20-40 min on 2 cores.
# Prints the folder holding the binaries on its last line.
set -euo pipefail

VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
CACHE="${MLCX_CACHE:-$HOME/.cache/mlcx}"
PREFIX="$CACHE/peers/llama.cpp-vulkan-$VERSION"
JOBS="${JOBS:-$(nproc)}"

if [ -x "$PREFIX/bin/llama-bench" ] && [ -x "$PREFIX/bin/llama-server" ]; then
  echo "$PREFIX/bin"
  exit 0
fi

PACKAGES=(glslc libvulkan-dev spirv-headers mesa-vulkan-drivers libvulkan1 cmake g++)
missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -ne 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "build-llamacpp-vulkan: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# shellcheck source=llamacpp-source.sh
source "$(dirname "$0")/llamacpp-source.sh"

# Debian 12's Vulkan headers (1.3.239) predate VK_EXT_layer_settings, which ggml-vulkan only uses
# to turn on best-practice validation; without the headers, drop that struct from the instance.
if ! grep -rq "LayerSettingsCreateInfoEXT" /usr/include/vulkan/ 2>/dev/null; then
  python3 - "$SRC/ggml/src/ggml-vulkan/ggml-vulkan.cpp" <<'PY'
import re, sys
path = sys.argv[1]
text = open(path).read()
text, n = re.subn(
    r"\n\s*VkBool32 enable_best_practice = layer_settings;\n\s*std::vector<vk::LayerSettingEXT> settings = \{.*?\n\s*\};\n\s*vk::LayerSettingsCreateInfoEXT layer_setting_info\(settings\);",
    "", text, flags=re.S)
text = text.replace(", extensions, &layer_setting_info);", ", extensions);")
if n != 1:
    sys.exit("build-llamacpp-vulkan: the layer-settings block was not found; patch ggml-vulkan.cpp by hand")
open(path, "w").write(text)
PY
fi

BUILD="$WORK/build-vulkan-$VERSION"
cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DGGML_VULKAN=ON -DLLAMA_CURL=OFF \
  -DGGML_NATIVE=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DBUILD_SHARED_LIBS=OFF >&2
cmake --build "$BUILD" -j "$JOBS" --target llama-bench llama-server >&2
mkdir -p "$PREFIX/bin"
cp "$BUILD/bin/llama-bench" "$BUILD/bin/llama-server" "$PREFIX/bin/"
echo "$PREFIX/bin"
