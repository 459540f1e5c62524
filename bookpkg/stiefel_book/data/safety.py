"""Guards for reading untrusted data files: tar members, pickles, checksums.

Tar archives are only ever read member by member in memory (never extracted), and any
archive holding a member that extraction could abuse is refused whole. Pickles are
loaded only after their checksum matched, and then by an unpickler that can build numpy
arrays and builtins and nothing else (no imports, no calls of arbitrary functions).
"""

from __future__ import annotations

import codecs
import hashlib
import io
import pickle
import re
import tarfile

import numpy as np

__all__ = ["md5_hex", "tar_member_problem", "restricted_loads"]

try:  # numpy >= 2 moved numpy.core to numpy._core; pickles name either
    from numpy._core.multiarray import _reconstruct
except ImportError:  # pragma: no cover - numpy 1.x
    from numpy.core.multiarray import _reconstruct


def _latin1(text: str, encoding: str = "latin1") -> bytes:
    """``_codecs.encode`` as Python 3 protocol-2 pickles use it for bytes, and no other codec."""
    if encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError(f"refusing to encode pickled text as {encoding!r}")
    return codecs.encode(text, "latin1")


# The only globals a pickle may name: what numpy arrays and protocol-2 bytes need.
_ALLOWED = {
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
    ("_codecs", "encode"): _latin1,
}
_DRIVE = re.compile(r"[A-Za-z]:")  # C:... is absolute on Windows
_SEPARATORS = re.compile(r"[\\/]")  # either separator: Windows extraction reads both


def md5_hex(data: bytes) -> str:
    """MD5 of ``data``, the checksum that CIFAR-10's distribution publishes. Chapter: cifar10_patches."""
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def tar_member_problem(member: tarfile.TarInfo) -> str | None:
    """Why ``member`` is unsafe to extract (absolute, ``..``, link, device), or None. Chapter: cifar10_patches."""
    name = member.name
    if name.startswith(("/", "\\")) or _DRIVE.match(name):
        return f"member {name!r} has an absolute path"
    if ".." in _SEPARATORS.split(name):
        return f"member {name!r} climbs out of the archive with '..'"
    if member.issym() or member.islnk():
        return f"member {name!r} is a link (to {member.linkname!r})"
    if not (member.isfile() or member.isdir()):
        return f"member {name!r} is a device, pipe or other special file"
    return None


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> object:
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"refusing to load global {module}.{name}") from None


def restricted_loads(data: bytes) -> object:
    """Unpickle ``data`` (Python 2 pickles too: text as bytes), building only arrays and builtins.
    Chapter: cifar10_patches."""
    return _RestrictedUnpickler(io.BytesIO(data), encoding="bytes").load()
