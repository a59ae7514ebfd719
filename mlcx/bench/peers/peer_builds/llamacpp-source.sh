# Sourced by the build-llamacpp-*.sh scripts: fetches llama-cpp-python's PyPI sdist (which
# vendors llama.cpp) into $CACHE/peers/src and extracts it once; sets SRC to llama.cpp's tree.
# Needs VERSION and CACHE set by the caller.
WORK="$CACHE/peers/src"
mkdir -p "$WORK"
SDIST="$WORK/llama_cpp_python-$VERSION.tar.gz"
if [ ! -f "$SDIST" ]; then
  python3 -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$VERSION" -d "$WORK" >&2
fi
SRC="$WORK/llama_cpp_python-$VERSION/vendor/llama.cpp"
[ -d "$SRC" ] || tar xzf "$SDIST" -C "$WORK"
