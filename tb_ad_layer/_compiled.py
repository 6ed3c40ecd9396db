"""Load the compiled converter modules only when they were built from the sources beside them.

The build compiles the converter's hot modules with mypyc (``build_support/compiled.py``) and
writes a stamp, :data:`STAMP_FILE`, holding the SHA-256 of every source it compiled. CPython's
path finder prefers an extension module (``reader.cpython-311-x86_64-linux-gnu.so``) to the
``reader.py`` beside it, so after a source is edited the old extension would silently run old
code. The finder :func:`install` puts first on ``sys.meta_path`` sees each import of a
``tb_ad_layer`` submodule; the first time it meets an extension module it compares the stamp
with the sources (a few hundred microseconds, once per process; a process that imports no
compiled module, such as TensorBoard serving stored runs, never does), and from then on either
lets the extension modules load or loads each of them from its source, after one line on
stderr that says why.

All or none: compiled modules of one build call each other directly, not through the import
system, so one module loaded from its source beside compiled ones would still run old code.

``TB_AD_LAYER_PURE_PYTHON=1`` loads the sources without a warning (the benchmarks compare the
two).

Every package import runs this module, so it imports only what the interpreter has loaded at
start-up (``os``, ``sys``, ``importlib.machinery``); the check imports what it needs when it
runs.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from importlib.machinery import ExtensionFileLoader, ModuleSpec, PathFinder
from types import ModuleType

PACKAGE = "tb_ad_layer"
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
STAMP_FILE = "_compiled_stamp.json"
PURE_ENV = "TB_AD_LAYER_PURE_PYTHON"


def source_sha256(path: str) -> str:
    """The stamp of one source file: SHA-256 of its bytes, as hex."""
    import hashlib

    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def module_source(package_dir: str, module: str) -> str:
    """The ``.py`` file of ``module`` (``tb_ad_layer.dump.reader``) under ``package_dir``."""
    return os.path.join(package_dir, *module.split(".")[1:]) + ".py"


class Verdict:
    """What the stamp says about the compiled modules of one installation.

    Attributes:
        use_compiled: the extension modules may load.
        modules: the modules the stamp lists as compiled (empty without a stamp).
        compiler: the compiler the stamp names, e.g. ``mypyc 2.4.1``.
        library: the shared library module that holds the compiled code of every module.
        reason: why the sources are used instead; empty when compiled modules are used, or when
            :data:`PURE_ENV` asked for the sources.
    """

    __slots__ = ("use_compiled", "modules", "compiler", "library", "reason")

    def __init__(self, use_compiled: bool, modules: tuple[str, ...], compiler: str, library: str,
                 reason: str) -> None:
        self.use_compiled = use_compiled
        self.modules = modules
        self.compiler = compiler
        self.library = library
        self.reason = reason

    def __repr__(self) -> str:
        return (f"Verdict(use_compiled={self.use_compiled}, modules={self.modules}, "
                f"compiler={self.compiler!r}, library={self.library!r}, reason={self.reason!r})")


def check(package_dir: str = PACKAGE_DIR) -> Verdict:
    """Compare the build stamp in ``package_dir`` with the sources beside it."""
    import json

    pure = os.environ.get(PURE_ENV, "") not in ("", "0")
    stamp_path = os.path.join(package_dir, STAMP_FILE)
    try:
        with open(stamp_path, encoding="utf-8") as f:
            stamp = json.load(f)
        sources = stamp["sources"]
        compiler = str(stamp["compiler"])
        library = str(stamp["library"])
        if not isinstance(sources, dict):
            raise TypeError("'sources' is not an object")
    except FileNotFoundError:
        return Verdict(False, (), "", "", "" if pure else
                       f"no build stamp at {stamp_path}")
    except (OSError, ValueError, KeyError, TypeError) as e:
        return Verdict(False, (), "", "", "" if pure else
                       f"unreadable build stamp {stamp_path} ({e})")
    modules = tuple(sorted(sources))
    if pure:
        return Verdict(False, modules, compiler, library, "")
    for module in modules:
        source = module_source(package_dir, module)
        try:
            fresh = source_sha256(source) == sources[module]
        except OSError as e:
            return Verdict(False, modules, compiler, library,
                           f"cannot read {source} to check its compiled module ({e.strerror})")
        if not fresh:
            return Verdict(False, modules, compiler, library,
                           f"{module} was compiled from another version of {source}")
    return Verdict(True, modules, compiler, library, "")


class CompiledModuleGuard:
    """A meta path finder: finds ``tb_ad_layer`` submodules as the path finder does, but hands
    out an extension module only when :func:`check` found the whole build fresh; otherwise the
    source module."""

    def __init__(self, package_dir: str = PACKAGE_DIR) -> None:
        self.package_dir = package_dir
        self._verdict: Verdict | None = None
        self._warned = False

    @property
    def verdict(self) -> Verdict:
        """The stamp check, made on first use and kept for the life of the process."""
        if self._verdict is None:
            self._verdict = check(self.package_dir)
        return self._verdict

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        """The spec of a ``tb_ad_layer`` submodule: the path finder's, or its source's in place
        of a compiled module the verdict refuses; None for every other module."""
        if path is None or not fullname.startswith(PACKAGE + "."):
            return None
        spec = PathFinder.find_spec(fullname, path, target)
        if spec is None or not isinstance(spec.loader, ExtensionFileLoader):
            return spec
        verdict = self.verdict
        if verdict.use_compiled and (fullname in verdict.modules or fullname == verdict.library):
            return spec
        if verdict.reason and not self._warned:
            self._warned = True
            sys.stderr.write(f"tb-ad-layer: not using the compiled modules: {verdict.reason}; "
                             f"running the Python sources (slower) until tb-ad-layer is "
                             f"reinstalled\n")
        source = os.path.join(os.path.dirname(spec.origin or ""),
                              fullname.rpartition(".")[2] + ".py")
        if not os.path.isfile(source):
            raise ImportError(f"{fullname}: its compiled module cannot be used and {source} "
                              f"is missing; reinstall tb-ad-layer", name=fullname)
        if verdict.use_compiled:
            # An extension left over from a build that did not compile this module.
            sys.stderr.write(f"tb-ad-layer: {spec.origin} is not part of this build; running "
                             f"{source} instead\n")
        import importlib.util

        return importlib.util.spec_from_file_location(fullname, source)


_GUARD = CompiledModuleGuard()


def install() -> None:
    """Put the guard first on ``sys.meta_path`` (once)."""
    if _GUARD not in sys.meta_path:
        sys.meta_path.insert(0, _GUARD)


def status() -> Verdict:
    """The verdict of this process: whether compiled modules run, and which ones were built."""
    return _GUARD.verdict


def describe() -> str:
    """One line for people: which implementation of the converter's hot modules runs."""
    verdict = status()
    if verdict.use_compiled:
        return f"compiled with {verdict.compiler}: {len(verdict.modules)} modules"
    if not verdict.reason:
        return f"Python sources ({PURE_ENV} is set)"
    if not verdict.modules:
        return f"Python sources (not compiled: {verdict.reason})"
    return f"Python sources ({verdict.reason})"
