"""The WebGPU plan: everything a WebGPU executor needs to run a compiled model without TVM.

`schema` (no TVM import) defines and validates the JSON both executors read; `build` derives it
from TVM's IR: `relax_walk` (entry functions), `host_launches` (kernel launches from the lowered
host TIR), `shaders` (WGSL and func_info per kernel), `expr` (integer expressions as JSON).
"""
