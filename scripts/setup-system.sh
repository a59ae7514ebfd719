#!/usr/bin/env bash
# Installs the Debian packages mlcx's targets and tests use. Safe to re-run; needs root (or sudo).
# Each group says who needs it; mlcx itself names the package when one is missing.
set -euo pipefail

PACKAGES=(
  # `mlcx compile --target metal|iphone|android` and `mlcx package`: link Mach-O / ELF objects,
  # make .a archives (clang, ld64.lld/ld.lld, llvm-ar); tests read them with llvm-nm/llvm-objdump
  clang lld llvm
  # `--target webgpu|vulkan` run through wgpu-native: Vulkan loader + Mesa lavapipe (CPU Vulkan)
  mesa-vulkan-drivers libvulkan1
  # the browser demo's end-to-end test and `mlcx bench web`: headless Chromium (SwiftShader WebGPU)
  chromium
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup-system: all ${#PACKAGES[@]} packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "setup-system: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
