"""Model runners: execute one forward step of a compiled artifact on a device. `runner.py`
declares the `Runner` protocol the engine is typed against and `forward_batch.py` the step it
receives; `registry.py` picks the runner by the runtime the artifact's target declares (TVM's
Relax VM, or the WebGPU plan through wgpu-native); `devices.py` lists what this machine runs."""
