"""`mlcx bench --profile` on TVM's Relax VM (cpu; cuda and metal synchronised per call).

The VM calls an instrument before and after every Call instruction; here it times each
kernel's call between the two, waiting for the device on both sides where the device runs
asynchronously. The VM's own builtins (shape checks, allocations) are left out of the table:
it lists kernels. The steps are those a normal run launches: only the instrument is added.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial

from mlcx.artifact.config import Artifact
from mlcx.bench.measure.kernel_profile import profile_two_steps
from mlcx.bench.measure.mlcx_engine import kv_blocks
from mlcx.bench.workloads.workload import Workload

BUILTINS = ("vm.builtin.", "relax.", "runtime.")  # the VM's bookkeeping calls, not kernels


class _Instrument:
    def __init__(self, device, synchronous: bool):
        self.device = device
        self.synchronous = synchronous
        self.samples: list[tuple[str, float]] = []
        self._started = 0.0

    def __call__(self, func, symbol: str, before: bool, ret, *args) -> int:
        if symbol.startswith(BUILTINS):
            return 0
        if not self.synchronous:
            self.device.sync()
        if before:
            self._started = time.perf_counter()
        else:
            self.samples.append((symbol, time.perf_counter() - self._started))
        return 0  # VMInstrumentReturnKind.NO_OP: run the call


@contextmanager
def instrumented(runner) -> Iterator[list[tuple[str, float]]]:
    instrument = _Instrument(runner.device, runner.device.dlpack_device_type() == 1)  # kDLCPU
    runner.vm.set_instrument(instrument)
    try:
        yield instrument.samples
    finally:
        runner.vm.set_instrument(lambda *args: 0)


def profile_vm(artifact: Artifact, workload: Workload, timestamps: bool) -> tuple:
    """One prefill of the workload's prompt and one decode step after it, per kernel
    (`timestamps` has no meaning here: the VM's calls are timed by the host's clock)."""
    from mlcx.runtime.backends.tvm_vm import TVMRunner

    blocks = kv_blocks(artifact, workload)
    runner = TVMRunner(artifact, blocks, num_state_slots=1)  # the one sequence's, if hybrid
    ids = workload.prompt_ids(artifact.config.model.vocab_size)
    timed = partial(instrumented, runner)
    return profile_two_steps(runner, artifact, blocks, ids, timed, "host clock per VM call")
