"""Tensor programs (TE computes and TIR kernels) that the model graphs call.

Kept apart from `frontends` (which emit them) and `passes` (which schedule them) because both
sides need them: a kernel is written once here, used by every architecture, and scheduled per
target by the passes.
"""
