"""The chapters' extras (``pip install './bookpkg[chapters]'``): which are missing, and stand-ins
that let the command line's ``--help`` and ``list`` read the experiments' registry without them.

The registry's modules import numpy, scipy, tqdm and the rest at their top, for their runs. A
listing runs none of that code, so where an extra is missing :func:`stand_ins` puts a stand-in
module in its place: importing it succeeds, and *using* anything from it raises
:class:`MissingExtraError`, which names the extra to install. Only the command line installs them,
and only after it has found an extra missing; a command that trains refuses first (one line)."""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import sys
import types
import warnings

__all__ = ["EXTRAS", "INSTALL", "MissingExtraError", "missing", "stand_ins"]

# import names of the extra ``chapters`` of bookpkg/pyproject.toml (PIL is pillow, yaml is pyyaml)
EXTRAS = ("numpy", "scipy", "matplotlib", "yaml", "tqdm", "ipywidgets", "PIL")
INSTALL = "pip install './bookpkg[chapters]'"


class MissingExtraError(ImportError):
    """Code that needs one of the chapters' extras ran where it is not installed."""


def missing() -> list[str]:
    """The extras that cannot be imported here (not installed, or blocked in ``sys.modules``)."""
    out = []
    for name in EXTRAS:
        if name in sys.modules:
            if sys.modules[name] is None or isinstance(sys.modules[name], _StandIn):
                out.append(name)
        elif importlib.util.find_spec(name) is None:
            out.append(name)
    if "numpy" in out:  # torch says so on import; the command line says what to install instead
        warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    return out


@contextlib.contextmanager
def stand_ins(names: list[str]):
    """While the block runs, a stand-in module takes the place of each of ``names`` (and of their
    submodules); after it, ``sys.modules`` says again what is missing (modules imported in the
    block keep their stand-ins). torch (and its compiler, which the experiments' modules load) is
    imported first, so that it sees the real absence, not a stand-in."""
    import torch._dynamo  # noqa: F401

    before = {name: sys.modules.get(name, _ABSENT) for name in names}
    finder = _Finder(set(names))
    for name in names:
        sys.modules[name] = _StandIn(name)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for name in [n for n in sys.modules if n.split(".")[0] in finder.names]:
            del sys.modules[name]
        sys.modules.update({name: module for name, module in before.items() if module is not _ABSENT})


_ABSENT = object()


class _MissingType(type):
    """Anything taken from a stand-in is a class of this kind: ``isinstance`` and subclassing
    work (nothing is ever an instance), more of it can be named, and calling it raises."""

    def __getattr__(cls, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _missing(f"{cls.__qualname__}.{attr}")

    def __call__(cls, *args, **kwargs):
        top = cls.__qualname__.split(".")[0]
        raise MissingExtraError(f"{cls.__qualname__} needs {top}, one of the chapters' extras: {INSTALL}")

    def __getitem__(cls, item):
        return cls

    def __or__(cls, other):
        return cls

    __ror__ = __or__


def _missing(name: str) -> type:
    cls = _MissingType(name.rpartition(".")[2], (), {})
    cls.__qualname__ = name
    return cls


class _StandIn(types.ModuleType):
    def __init__(self, name: str):
        super().__init__(name)
        self.__path__ = []  # a package: its submodules come from _Finder

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _missing(f"{self.__name__}.{attr}")


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, names: set[str]):
        self.names = names

    def find_spec(self, fullname, path, target=None):
        if fullname.split(".")[0] in self.names:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return _StandIn(spec.name)

    def exec_module(self, module):
        pass
