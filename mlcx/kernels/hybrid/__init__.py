"""Kernels of hybrid models' state layers: the short causal convolution (LFM2, and the one in
front of a Gated DeltaNet) and the gated delta rule (Qwen3.5), for CPU and GPU targets, with
their per-sequence state updated in place at the slots the runtime names (the state-cache
contract: mlcx.kernels.step_params STATE_SLOTS / STATES / COPY_STATES).

- shapes:          ConvShape, DeltaShape (validated geometry, state tensor shapes and dtypes)
- ops:             StateOps, the graph-level calls (conv, delta_rule, copy_states)
- conv_cpu/_gpu:   the convolution with its state
- delta_cpu_*:     the chunked prefill (WY/UT form) and the recurrent decode step on CPU
- delta_gpu_*:     the same on GPUs (prefill in three kernels: prep, solve, scan)
- copy:            copy_states (prefix checkpoints and forks)
"""
