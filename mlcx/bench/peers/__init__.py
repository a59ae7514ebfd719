"""The engines and servers `mlcx bench --against` runs beside mlcx (llama-cpp-python,
llama.cpp's `llama-bench`, `llama-server` and `llama-mtmd-cli`), and their builds from source
(`peer_builds/`, cached in the mlcx cache)."""
