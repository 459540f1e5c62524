"""The bytes of a results file: gzip JSON (``NAME-PROFILE.json.gz``), read transparently.

Every reader and writer of a results file by path goes through here: :func:`find` (which file a
name has in a folder: the ``.json.gz``, or an older plain ``.json``; both at once is an error),
:func:`read` and :func:`write`. A written file's bytes depend on its contents alone (sorted keys,
one-space indent, gzip at a fixed level with no time stamp and no file name), so rewriting the
same runs gives the same bytes and git sees no change; it is written to a temporary file and
renamed, so a crash never leaves half a file. Within :func:`reading_once`, a file unchanged since
it was read is not read again. Standard library only: the tools import it too."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import zlib
from pathlib import Path

__all__ = [
    "GZ",
    "PLAIN",
    "ResultsFileError",
    "DamagedResultsError",
    "TwoFormsError",
    "stem",
    "forms",
    "find",
    "target",
    "lock_path",
    "encode",
    "read",
    "reading_once",
    "write",
]

GZ, PLAIN = ".json.gz", ".json"
LEVEL = 9  # gzip's compression level: fixed, so that the same contents give the same bytes
_READ_ONCE: dict | None = None  # inside reading_once(): {(path, mtime, size): contents}


class ResultsFileError(ValueError):
    """A results file that nothing may read or write until someone looks at it."""


class DamagedResultsError(ResultsFileError):
    """A results file that is not valid (gzip) JSON, or holds no ``runs`` (cut short by a full
    disk, a copy stopped half way, a merge left unresolved). Nothing reads or writes it until it
    is restored."""


class TwoFormsError(ResultsFileError):
    """A folder holding one results file twice: ``NAME.json.gz`` and an older plain ``NAME.json``."""


def stem(path: Path | str) -> str:
    """``grokking-full`` for ``grokking-full.json.gz`` or ``grokking-full.json``."""
    name = Path(path).name
    for suffix in (GZ, PLAIN):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    raise ValueError(f"{path} is not a results file (its name ends neither in {GZ} nor in {PLAIN})")


def forms(folder: Path | str, name: str) -> tuple[Path, Path]:
    """The two paths a results file ``name`` (``grokking-full``) may have in ``folder``: gzip, plain."""
    return Path(folder) / f"{name}{GZ}", Path(folder) / f"{name}{PLAIN}"


def find(folder: Path | str, name: str) -> Path | None:
    """The results file ``name`` in ``folder`` (its ``.json.gz``, else a plain ``.json``), ``None``
    when there is neither; :class:`TwoFormsError` when there are both."""
    gz, plain = forms(folder, name)
    if gz.exists() and plain.exists():
        raise TwoFormsError(_two_forms(gz, plain))
    return gz if gz.exists() else plain if plain.exists() else None


def target(folder: Path | str, name: str) -> Path:
    """Where ``name``'s results are: the file :func:`find` finds, else the ``.json.gz`` to write."""
    return find(folder, name) or forms(folder, name)[0]


def lock_path(path: Path | str) -> Path:
    """The lock file beside a results file, the same for both its forms (``NAME.lock``)."""
    return Path(path).parent / f"{stem(path)}.lock"


def encode(results: dict) -> bytes:
    """A results file's bytes: sorted keys, indent 1, a final newline, gzip without a time stamp."""
    text = json.dumps(results, indent=1, sort_keys=True) + "\n"
    return gzip.compress(text.encode(), compresslevel=LEVEL, mtime=0)


@contextlib.contextmanager
def reading_once():
    """Inside the block, :func:`read` decompresses and parses a file once: a later read of the
    same path, its modification time and size unchanged, returns the same object. For readers
    that change nothing they read (the claims table asks for each of its files many times); a
    block inside another shares the outer one's."""
    global _READ_ONCE
    outer = _READ_ONCE
    _READ_ONCE = {} if outer is None else outer
    try:
        yield
    finally:
        _READ_ONCE = outer


def read(path: Path | str) -> dict:
    """The contents of the results file at ``path`` (gzip or plain by its name); a file that is not
    valid JSON, or not an object holding ``runs``, is a :class:`DamagedResultsError`."""
    path = Path(path)
    if _READ_ONCE is None:
        return _read(path)
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    if key not in _READ_ONCE:
        _READ_ONCE[key] = _read(path)
    return _READ_ONCE[key]


def _read(path: Path) -> dict:
    data = path.read_bytes()
    try:
        if path.name.endswith(GZ):
            data = gzip.decompress(data)
        results = json.loads(data)
    except (EOFError, gzip.BadGzipFile, zlib.error) as error:
        raise DamagedResultsError(_damaged(path, f"not valid gzip ({error})")) from None
    except json.JSONDecodeError as error:
        raise DamagedResultsError(
            _damaged(path, f"not valid JSON ({error.msg}, line {error.lineno} column {error.colno})")
        ) from None
    except UnicodeDecodeError as error:
        raise DamagedResultsError(_damaged(path, f"not valid JSON ({error.reason})")) from None
    if not isinstance(results, dict) or not isinstance(results.get("runs"), dict):
        raise DamagedResultsError(_damaged(path, "not a results file: it holds no runs"))
    return results


def write(results: dict, path: Path | str) -> Path:
    """Write ``results`` atomically as gzip JSON at ``path`` (``NAME.json`` becomes ``NAME.json.gz``)
    and remove the plain ``NAME.json`` beside it, whose runs the caller read into ``results``.
    Returns the path written. An error (contents JSON cannot hold, a full disk) leaves no
    temporary file and the old file as it was."""
    gz, plain = forms(Path(path).parent, stem(path))
    data = encode(results)  # before any file is opened: contents JSON cannot hold change nothing
    gz.parent.mkdir(parents=True, exist_ok=True)
    tmp = gz.with_name(gz.name + ".tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, gz)
    finally:
        tmp.unlink(missing_ok=True)
    plain.unlink(missing_ok=True)
    return gz


def _damaged(path: Path, why: str) -> str:
    return (
        f"{path} is damaged: {why}. Restore it from git (`git checkout -- {path}`), or move it aside "
        "to start its runs again; it was left as it is."
    )


def _two_forms(gz: Path, plain: Path) -> str:
    """Both forms of one results file: which to delete, from the runs each holds."""
    runs = {}
    for path in (gz, plain):
        try:
            runs[path] = set(read(path)["runs"])
        except ResultsFileError:
            runs[path] = None
    if runs[plain] is not None and runs[gz] is not None and runs[plain] <= runs[gz]:
        advice = f"delete {plain}: every run it holds is in {gz}"
    elif runs[plain] is not None and runs[gz] is not None and runs[gz] <= runs[plain]:
        advice = f"delete {gz}: every run it holds is in {plain}"
    elif runs[gz] is None or runs[plain] is None:
        bad = gz if runs[gz] is None else plain
        advice = f"delete {bad}: it is damaged"
    else:
        advice = (
            f"they hold different runs ({len(runs[plain] - runs[gz])} only in {plain.name}, "
            f"{len(runs[gz] - runs[plain])} only in {gz.name}): merge {plain.name}'s runs into {gz.name}, "
            f"then delete {plain}"
        )
    return f"{gz} and {plain} are two forms of one results file, and only one may exist: {advice}"
