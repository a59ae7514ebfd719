"""How a benchmark measures: timing mlcx's compiled steps, per-kernel and per-phase profiles,
the host's memory bandwidth, KV capacity, and the load generator for servers."""
