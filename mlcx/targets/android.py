"""Android: a static .a and a shared .so for aarch64-linux-android with OpenCL kernels embedded.

An Android app links the .a into its JNI library (or dlopens the .so after the TVM
runtime) and loads the weights bundled next to it; see mlcx.targets.mobile and
docs/packaging.md.
"""

from __future__ import annotations

from mlcx.targets.mobile import MobilePlatform, MobileTarget

ANDROID = MobilePlatform(
    name="android",
    summary=(
        "Android apps: a static .a and a shared .so for aarch64-linux-android with OpenCL "
        "kernels, plus the weights (see `mlcx package`)"
    ),
    device_kind="opencl",
    # Portable across Adreno and Mali: no subgroup shuffles (warp 1), 256 threads, 16 KiB.
    device_limits={
        "max_threads_per_block": 256,
        "max_num_threads": 256,
        "thread_warp_size": 1,
        "max_shared_memory_per_block": 16384,
    },
    host_triple="aarch64-linux-android24",
    source_suffix="cl",
    shared_library=True,
    archive_format="gnu",
    tools=("llvm-ar", "clang", "ld.lld"),
)


class AndroidTarget(MobileTarget):
    platform = ANDROID
    name = ANDROID.name
    summary = ANDROID.summary
