"""CIFAR-10 as uint8 arrays, from the official pickled batches or from a JPEG copy.

A source is given as an argument or by the ``STIEFEL_CIFAR10`` environment variable:

- ``"official"``: ``cifar-10-python.tar.gz``, or its unpacked ``cifar-10-batches-py/``;
- ``"jpeg"``: a folder or tarball (.tar, .tar.gz, .tar.xz) of ``train/<class>/*.jpg`` and
  ``test/<class>/*.jpg``, such as ``../shared/data/cifar10-jpeg.tar.xz`` (lossy re-encoding).

Reading data is a security boundary, so:

- archives are read member by member in memory, never extracted: nothing is written
  anywhere but the cache, and an archive holding an absolute path, a ``..`` component,
  a link or a device file is refused whole (see ``safety.tar_member_problem``);
- a pickled batch is unpickled only after its MD5 matches the published value, and then
  by an unpickler that builds nothing but numpy arrays and builtins;
- decoded arrays are cached as ``.npz`` and loaded with ``allow_pickle=False``.
"""

from __future__ import annotations

import hashlib
import io
import lzma
import os
import tarfile
import urllib.request
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor
from tqdm.auto import tqdm

from .cifar10_cache import CACHE_FORMAT, cache_folder, read_cache, write_cache
from .safety import md5_hex, restricted_loads, tar_member_problem

__all__ = ["CLASSES", "DataError", "CIFAR10Data", "load_cifar10"]  # standardising them: normalize.py

CLASSES = (
    "airplane",
    "automobile",
    "bird",
    "cat",
    "deer",
    "dog",
    "frog",
    "horse",
    "ship",
    "truck",
)  # label order of CIFAR-10
OFFICIAL_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
ARCHIVE_NAME = "cifar-10-python.tar.gz"
# Published checksums (the values torchvision's CIFAR10 checks). Tests swap in their own.
OFFICIAL_ARCHIVE_MD5 = "c58f30108f718f92721af3b95e74349a"
OFFICIAL_MD5 = {
    "data_batch_1": "c99cafc152244af753f735de768cd75f",
    "data_batch_2": "d4bba439e000b95fd0a9bffe97cbabec",
    "data_batch_3": "54ebc095f3ab1f0389bbae665268c751",
    "data_batch_4": "634d18415352ddfa80567beed471001a",
    "data_batch_5": "482c414d41f54cd18b22e5b47cb7c3cb",
    "test_batch": "40351d587109b95175f43aff81a1287e",
}
SOURCE_ENV = "STIEFEL_CIFAR10"
_SPLITS = ("train", "test")
HOW_TO_GET = (
    "To get CIFAR-10: set STIEFEL_CIFAR10 (or pass `source`) to the official "
    f"{ARCHIVE_NAME} (https://www.cs.toronto.edu/~kriz/cifar-10.html), to its unpacked "
    "folder cifar-10-batches-py/, or to a JPEG copy such as ../shared/data/cifar10-jpeg.tar.xz "
    "(train/<class>/*.jpg, test/<class>/*.jpg); or call load_cifar10(download=True) to "
    "fetch and verify the official archive."
)


class DataError(ValueError):
    """CIFAR-10 data is missing, truncated, malformed or unsafe; the message says how to get it.
    Chapter: cifar10_patches."""


def _error(message: str) -> DataError:
    return DataError(f"{message}\n{HOW_TO_GET}")


@dataclass(frozen=True, eq=False)
class CIFAR10Data:
    """CIFAR-10 images ``(N, 32, 32, 3)`` uint8 RGB and labels ``(N,)`` int64, with provenance.
    Chapter: cifar10_patches."""

    train_images: np.ndarray  # (50000, 32, 32, 3) uint8
    train_labels: np.ndarray  # (50000,) int64 in [0, 10)
    test_images: np.ndarray  # (10000, 32, 32, 3) uint8
    test_labels: np.ndarray  # (10000,) int64
    source_kind: str  # "official" (lossless pickled batches) or "jpeg" (re-encoded copy)
    source: str  # the path that was read
    source_hash: str  # "sha256:..." of an archive, "listing-sha256:..." of a folder
    classes: tuple[str, ...] = CLASSES

    def tensors(self) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """``(train_images, train_labels, test_images, test_labels)`` as tensors sharing memory."""
        arrays = (self.train_images, self.train_labels, self.test_images, self.test_labels)
        return tuple(torch.from_numpy(a) for a in arrays)  # type: ignore[return-value]

    def provenance(self) -> dict[str, str]:
        """What a results file should record about the data it used."""
        return {
            "dataset": "CIFAR-10",
            "source_kind": self.source_kind,
            "source": self.source,
            "source_hash": self.source_hash,
        }


def load_cifar10(
    source: str | os.PathLike[str] | None = None,
    *,
    download: bool = False,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: bool = True,
) -> CIFAR10Data:
    """Read CIFAR-10 from ``source`` (else ``$STIEFEL_CIFAR10``), decoding it once per user.

    ``download=True`` fetches the official archive when the source holds no data: to
    ``source`` if it names a ``.tar.gz``, into the folder ``source`` otherwise, or into the
    cache folder when no source is given; its MD5 is checked before it is used. The cache
    folder is ``cache_dir``, else ``$STIEFEL_CACHE/cifar10``, else
    ``~/.cache/stiefel_core/cifar10``. Raises ``DataError`` (a ``ValueError``) that says
    what is wrong and how to get the data.
    Chapter: cifar10_patches.
    """
    cache = cache_folder(cache_dir)
    path = _locate(source, download, cache, progress)
    source_hash = _fingerprint(path)
    key = hashlib.sha256(f"{CACHE_FORMAT}|{source_hash}".encode()).hexdigest()[:24]
    cache_file = cache / f"cifar10-{key}.npz"
    found = read_cache(cache_file, _checked)
    if found is None:
        found = _decode(path, progress)
        write_cache(cache_file, *found)
    kind, arrays = found
    return CIFAR10Data(*arrays, source_kind=kind, source=str(path.resolve()), source_hash=source_hash)


# --- where the data is -------------------------------------------------------------------


def _locate(source, download: bool, cache: Path, progress: bool) -> Path:
    """The file or folder to read, downloading the official archive if asked to."""
    given = source if source is not None else os.environ.get(SOURCE_ENV) or None
    if given is None:
        target = cache / ARCHIVE_NAME  # where an earlier download=True left it
        if download:
            return _download(target, progress)
        if target.is_file():
            return target
        raise _error(f"No CIFAR-10 source was given (argument `source` or {SOURCE_ENV}).")
    path = Path(given).expanduser()
    if path.is_file() or (path.is_dir() and _holds_data(path)):
        return path
    if download:
        return _download(path if path.name.endswith(".tar.gz") else path / ARCHIVE_NAME, progress)
    if not path.exists():
        raise _error(f"CIFAR-10 source {path} does not exist.")
    raise _error(f"{path} holds no CIFAR-10 data.")


def _holds_data(folder: Path) -> bool:
    return (folder / ARCHIVE_NAME).is_file() or any(_classify(name) for name, _ in _folder_files(folder))


def _fetch(url: str, dest: Path, progress: bool) -> None:
    """Download ``url`` to ``dest`` (the only network access; tests replace it)."""
    with urllib.request.urlopen(url, timeout=60) as response, open(dest, "wb") as out:
        total = int(response.headers.get("Content-Length") or 0) or None
        with tqdm(
            total=total,
            unit="B",
            unit_scale=True,
            desc="downloading CIFAR-10",
            **({} if progress else {"disable": True}),
        ) as bar:
            while chunk := response.read(1 << 20):
                out.write(chunk)
                bar.update(len(chunk))


def _download(target: Path, progress: bool) -> Path:
    """``target`` holding the official archive, verified by MD5 (fetched if needed)."""
    if target.is_file() and md5_hex(target.read_bytes()) == OFFICIAL_ARCHIVE_MD5:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    try:
        _fetch(OFFICIAL_URL, partial, progress)
        got = md5_hex(partial.read_bytes())
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise _error(f"Downloading {OFFICIAL_URL} failed: {exc}") from exc
    if got != OFFICIAL_ARCHIVE_MD5:
        partial.unlink(missing_ok=True)
        raise _error(
            f"The downloaded archive has MD5 {got}, not the published "
            f"{OFFICIAL_ARCHIVE_MD5}: it is incomplete or not the official one."
        )
    os.replace(partial, target)
    return target


def _fingerprint(path: Path) -> str:
    """SHA-256 of an archive's bytes, or of a folder's listing (path, size, mtime)."""
    digest = hashlib.sha256()
    if path.is_file():
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
        return f"sha256:{digest.hexdigest()}"
    for name, file in _folder_files(path):
        stat = file.stat()
        digest.update(f"{name}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return f"listing-sha256:{digest.hexdigest()}"


# --- reading and decoding -------------------------------------------------------------


def _folder_files(folder: Path) -> Iterator[tuple[str, Path]]:
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            file = Path(root, name)
            yield file.relative_to(folder).as_posix(), file


def _entries(path: Path) -> Iterator[tuple[str, bytes]]:
    """``(name, bytes)`` of every CIFAR-10 file in a folder or (safely read) tarball."""
    if path.is_dir():
        files = list(_folder_files(path))
        if not any(_classify(name) for name, _ in files) and (path / ARCHIVE_NAME).is_file():
            yield from _entries(path / ARCHIVE_NAME)
            return
        for name, file in files:
            if _classify(name):
                yield name, file.read_bytes()
        return
    try:
        with tarfile.open(path, "r:*") as tar:
            for member in tar:
                problem = tar_member_problem(member)
                if problem:
                    raise _error(f"Refusing the unsafe archive {path}: {problem}.")
                if member.isfile() and _classify(member.name):
                    yield member.name, tar.extractfile(member).read()  # type: ignore[union-attr]
    except (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError) as exc:
        raise _error(
            f"{path} is not a readable tar archive (truncated or corrupt?): {type(exc).__name__}: {exc}"
        ) from exc


def _classify(name: str) -> tuple[str, ...] | None:
    """``("official", batch)``, ``("jpeg", split, class, file)``, or None for other files."""
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if parts and parts[-1] in OFFICIAL_MD5:
        return ("official", parts[-1])
    if (
        len(parts) >= 3
        and parts[-3] in _SPLITS
        and parts[-2] in CLASSES
        and parts[-1].lower().endswith((".jpg", ".jpeg"))
    ):
        return ("jpeg", *parts[-3:])
    return None


def _decode(path: Path, progress: bool) -> tuple[str, tuple[np.ndarray, ...]]:
    found: dict[tuple[str, ...], bytes] = {}
    bar = {} if progress else {"disable": True}
    for name, blob in tqdm(_entries(path), desc=f"reading {path.name}", unit=" files", **bar):
        key = _classify(name)
        if key in found:
            raise _error(f"{path} holds {name} twice (two copies of CIFAR-10 in one place?).")
        found[key] = blob  # type: ignore[index]
    kinds = {key[0] for key in found}
    if kinds == {"official"}:
        return "official", _official_arrays({k[1]: v for k, v in found.items()})
    if kinds == {"jpeg"}:
        return "jpeg", _jpeg_arrays({k[1:]: v for k, v in found.items()}, progress)
    if kinds:
        raise _error(f"{path} holds both official batches and JPEG files; point at one of them.")
    raise _error(
        f"{path} holds no CIFAR-10 data: expected data_batch_1..5 and test_batch "
        "(official), or train/<class>/*.jpg and test/<class>/*.jpg (JPEG copy)."
    )


def _official_arrays(batches: dict[str, bytes]) -> tuple[np.ndarray, ...]:
    missing = sorted(set(OFFICIAL_MD5) - set(batches))
    if missing:
        raise _error(
            f"Official CIFAR-10 batches are missing: {', '.join(missing)} (incomplete folder or truncated archive?)."
        )
    for name, expected in OFFICIAL_MD5.items():  # every checksum before any unpickling
        got = md5_hex(batches[name])
        if got != expected:
            raise _error(
                f"{name} has MD5 {got}, not the published {expected}: the file is "
                "truncated, corrupt or not the official one. It was not unpickled."
            )
    parts = [_parse_batch(name, _unpickle(batches[name], name)) for name in OFFICIAL_MD5]
    train_x = np.concatenate([x for x, _ in parts[:5]])
    train_y = np.concatenate([y for _, y in parts[:5]])
    return _checked(train_x, train_y, *parts[5])


def _unpickle(raw: bytes, name: str) -> object:
    try:
        return restricted_loads(raw)
    except Exception as exc:  # a refused global, or bytes that are not a pickle
        raise _error(f"{name} could not be unpickled safely: {exc}") from exc


def _parse_batch(name: str, batch: object) -> tuple[np.ndarray, np.ndarray]:
    """A batch dict's ``data`` (N, 3072) rows (R, G, B planes) as (N, 32, 32, 3) images."""

    def get(key: str) -> object:
        return batch.get(key.encode(), batch.get(key)) if isinstance(batch, dict) else None

    data, labels = get("data"), get("labels")
    if not (
        isinstance(data, np.ndarray)
        and data.dtype == np.uint8
        and data.ndim == 2
        and data.shape[1] == 3072
        and isinstance(labels, (list, np.ndarray))
        and len(labels) == len(data)
    ):
        raise _error(f"{name} is not a CIFAR-10 batch (expected uint8 data (N, 3072) and N labels).")
    images = data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)  # (N, 32, 32, 3)
    return np.ascontiguousarray(images), np.asarray(labels, dtype=np.int64)


def _decode_jpeg(blob: bytes, name: str) -> np.ndarray:
    """One JPEG file as a (32, 32, 3) uint8 RGB array."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(blob), formats=("JPEG",)) as image:
            rgb = np.asarray(image if image.mode == "RGB" else image.convert("RGB"))
    except Exception as exc:  # Pillow raises many types for broken files
        raise _error(f"{name} is not a readable JPEG image: {exc}") from exc
    if rgb.shape != (32, 32, 3):
        raise _error(f"{name} is {rgb.shape[1]}x{rgb.shape[0]}, not a 32x32 CIFAR-10 image.")
    return rgb


def _jpeg_arrays(files: dict[tuple[str, ...], bytes], progress: bool) -> tuple[np.ndarray, ...]:
    """Images in a fixed order (class, then file name), whatever order they were read in."""
    bar = tqdm(total=len(files), desc="decoding JPEGs", unit=" images", **({} if progress else {"disable": True}))
    arrays: list[np.ndarray] = []
    with bar:
        for split in _SPLITS:
            keys = sorted((CLASSES.index(c), f) for s, c, f in files if s == split)
            present = {label for label, _ in keys}
            absent = [c for i, c in enumerate(CLASSES) if i not in present]
            if absent:
                raise _error(f"The JPEG copy has no {split} images of class {', '.join(absent)}.")
            images = np.empty((len(keys), 32, 32, 3), dtype=np.uint8)
            for row, (label, file) in enumerate(keys):
                name = f"{split}/{CLASSES[label]}/{file}"
                images[row] = _decode_jpeg(files[(split, CLASSES[label], file)], name)
                bar.update()
            arrays += [images, np.array([label for label, _ in keys], dtype=np.int64)]
    return _checked(*arrays)


def _checked(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """The four arrays, after checking dtypes, shapes and label range."""
    for images, labels in (arrays[:2], arrays[2:]):
        if not (
            images.dtype == np.uint8
            and images.ndim == 4
            and images.shape[1:] == (32, 32, 3)
            and labels.dtype == np.int64
            and labels.shape == images.shape[:1]
            and len(labels) > 0
            and labels.min() >= 0
            and labels.max() < len(CLASSES)
        ):
            raise _error("Decoded CIFAR-10 arrays have unexpected shapes, types or labels.")
    return arrays
