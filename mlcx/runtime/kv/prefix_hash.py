"""Content hashes that identify a full KV cache block by the whole prefix ending in it."""

import hashlib
from array import array
from collections.abc import Sequence

# A cryptographic digest rather than Python's `hash`: a client who can craft colliding token
# sequences could otherwise read or corrupt another request's cached KV.
_DIGEST_SIZE = 16
_ROOT = b"\x00" * (_DIGEST_SIZE + 1)


def hash_block(parent_hash: int | None, token_ids: Sequence[int]) -> int:
    """Hash of a block given the hash of the block before it (None for the first block).

    Chaining makes two blocks equal only if their whole prefixes are equal, so a block found
    in the cache can be reused together with every block before it.
    """
    digest = hashlib.blake2b(digest_size=_DIGEST_SIZE)
    if parent_hash is None:
        digest.update(_ROOT)
    else:
        digest.update(b"\x01" + parent_hash.to_bytes(_DIGEST_SIZE, "little"))
    digest.update(array("q", token_ids).tobytes())
    return int.from_bytes(digest.digest(), "little")
