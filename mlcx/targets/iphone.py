"""iPhone and iPad: a static library of Mach-O arm64 objects with the Metal kernels embedded.

An iOS app links it with the TVM runtime (built for iOS) and loads the weights bundled
next to it; see mlcx.targets.mobile and docs/packaging.md.
"""

from __future__ import annotations

from mlcx.targets.metal import METAL_LIMITS
from mlcx.targets.mobile import MobilePlatform, MobileTarget

IPHONE = MobilePlatform(
    name="iphone",
    summary=(
        "iOS apps: a static .a of Mach-O arm64 objects with the Metal kernels embedded, "
        "plus the weights (see `mlcx package`)"
    ),
    device_kind="metal",
    # Phones: 256 threads per threadgroup keeps every kernel within older A-series limits.
    device_limits={**METAL_LIMITS, "max_threads_per_block": 256, "max_num_threads": 256},
    host_triple="arm64-apple-ios14.0",
    source_suffix="metal",
    shared_library=False,
    archive_format="darwin",
)


class IPhoneTarget(MobileTarget):
    platform = IPHONE
    name = IPHONE.name
    summary = IPHONE.summary
