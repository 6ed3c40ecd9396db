"""Find run stores under the logdir and keep them open while TensorBoard runs.

A run is a directory ``<logdir>/<run>/`` holding ``plugins/ad_layer/run.sqlite`` at any depth;
its name is the path relative to the logdir with ``/`` (``.`` for the logdir itself, as
TensorBoard names it). Runs come and go while TensorBoard runs, so the logdir is rescanned
lazily, at most every ``rescan_interval_s``, by whichever request arrives first; requests
never wait for a scan except the very first.

Security: a request's run name is only ever looked up in the discovered set, never joined to a
path. Nothing outside the logdir is ever read, even when the tree changes after a scan:

* the scan skips hidden directories and follows a symlinked directory (or store file) only when
  its target resolves inside the logdir, so a link to ``/`` cannot expose the host;
* every lookup resolves the store's path again (:func:`file_identity`), so a store, its
  ``plugins/`` folder or any directory on the way swapped for a link out of the logdir after the
  scan makes the run disappear at once, as a removed run does;
* every open checks the file SQLite actually opened (``RunStore(within=logdir)``), which closes
  the window between that lookup and the open.

Replacement: the converter replaces a store by rename, so a changed file identity (device,
inode, mtime, size) means a new store. Every lookup stats the file (microseconds) and swaps in a
fresh :class:`RunHandle` when the identity changed; requests already holding the old handle keep
reading the old inode through its open connection, which stays valid after the rename.
"""
from __future__ import annotations

import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

from tb_ad_layer.errors import InputError
from tb_ad_layer.metadata import STORE_DIR, STORE_FILE
from tb_ad_layer.plugin.errors import BAD_REQUEST, NOT_FOUND, UNREADABLE, ApiError, show
from tb_ad_layer.store.reader import RunStore, is_inside

logger = logging.getLogger(__name__)

#: (st_dev, st_ino, st_mtime_ns, st_size): what changes when a store is replaced or rewritten.
FileIdentity = tuple[int, int, int, int]

#: A scan stops after this many directories so a huge logdir cannot stall a request for long.
MAX_SCAN_DIRS = 50_000


def file_identity(path: str | Path, root: str) -> FileIdentity | None:
    """The identity of the regular file ``path`` resolves to, or None when it is not one or
    resolves outside ``root`` (a real path)."""
    real = os.path.realpath(path)
    if not is_inside(real, root):
        return None
    try:
        st = os.stat(real)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)


class RunHandle:
    """One version of one run's store: opened lazily, at most once.

    ``memo`` holds data derived from this version (kernel index, overview figures); it dies with
    the handle when the store is replaced, which is what keeps every cache consistent.
    """

    def __init__(self, name: str, path: Path, identity: FileIdentity, root: str) -> None:
        self.name = name
        self.path = path
        self.identity = identity
        self.root = root
        self.memo: dict[Hashable, Any] = {}
        self._lock = threading.Lock()
        self._opened = False
        self._store: RunStore | None = None
        self._error: str | None = None

    def _open(self) -> None:
        with self._lock:
            if self._opened:
                return
            try:
                self._store = RunStore(self.path, within=self.root)
            except InputError as e:  # other schema version, damaged, outside the logdir
                self._error = e.message
            except Exception as e:  # OS errors: a broken file is listed, not fatal
                self._error = f"not a readable run store ({e})"
            self._opened = True

    @property
    def error(self) -> str | None:
        """Why this store cannot be read (schema version, damage, a link out of the logdir),
        or None."""
        self._open()
        return self._error

    def store(self) -> RunStore:
        """The open store; :class:`ApiError` 409 when it cannot be read."""
        self._open()
        if self._store is None:
            raise ApiError(UNREADABLE, f"run {self.name!r} cannot be read: {self._error}")
        return self._store

    def memoize(self, key: Hashable, build: Callable[[], Any]) -> Any:
        """``memo[key]``, built once per store version. Two threads may both build it on a
        race; both results are equal, so no lock is held while building."""
        value = self.memo.get(key)
        if value is None:
            value = build()
            self.memo[key] = value
        return value


class RunDiscovery:
    """The set of runs under one logdir, kept current while TensorBoard runs. Thread-safe."""

    def __init__(self, logdir: str | Path | None, rescan_interval_s: float = 2.0,
                 clock_s: Callable[[], float] = time.monotonic) -> None:
        self.logdir = os.path.abspath(logdir) if logdir else None
        #: The logdir's real path as of the last scan: everything read must be inside it.
        self.root = os.path.realpath(self.logdir) if self.logdir else ""
        self.rescan_interval_s = rescan_interval_s
        self._clock_s = clock_s
        self._lock = threading.Lock()          # guards _handles
        self._scan_lock = threading.Lock()     # one scanner at a time
        self._handles: dict[str, RunHandle] = {}
        self._last_scan_s: float | None = None

    # -- scanning ---------------------------------------------------------------------------

    def _scan(self) -> dict[str, Path]:
        """Walk the logdir; return run name -> store path. Never follows links out of it."""
        if not self.logdir or not os.path.isdir(self.logdir):
            return {}
        root = os.path.realpath(self.logdir)
        self.root = root
        root_prefix = root.rstrip(os.sep) + os.sep
        found: dict[str, Path] = {}
        visited: set[str] = {root}
        stack: list[tuple[str, str]] = [(root, "")]  # (real directory, run name so far)
        dirs = 0
        while stack:
            real_dir, rel = stack.pop()
            dirs += 1
            if dirs > MAX_SCAN_DIRS:
                logger.warning("ad_layer: stopped scanning %s after %d directories",
                               self.logdir, MAX_SCAN_DIRS)
                break
            store = os.path.join(real_dir, *STORE_DIR, STORE_FILE)
            if os.path.isfile(store):
                real_store = os.path.realpath(store)
                if real_store.startswith(root_prefix):
                    found[rel or "."] = Path(store)
            try:
                with os.scandir(real_dir) as it:
                    entries = sorted(it, key=lambda e: (e.is_symlink(), e.name))
            except OSError:
                continue
            children: list[tuple[str, str]] = []
            for entry in entries:
                if entry.name.startswith("."):
                    continue  # temporary and tool directories (.git, .ipynb_checkpoints)
                try:
                    if not entry.is_dir():  # follows links; checked below
                        continue
                    target = os.path.realpath(entry.path) if entry.is_symlink() else entry.path
                except OSError:
                    continue
                if target != root and not target.startswith(root_prefix):
                    continue  # a link out of the logdir: never followed
                if target in visited:
                    continue  # link loops and aliases: each directory once
                visited.add(target)
                children.append((target, f"{rel}/{entry.name}" if rel else entry.name))
            stack.extend(reversed(children))
        return found

    def rescan(self, force: bool = False) -> None:
        """Rescan if the last scan is older than ``rescan_interval_s`` (or ``force``).

        Only one thread scans; the others go on with the current set, except before the first
        scan has finished, when they wait for it.
        """
        now_s = self._clock_s()
        if not force and self._last_scan_s is not None \
                and now_s - self._last_scan_s < self.rescan_interval_s:
            return
        first = self._last_scan_s is None
        if not self._scan_lock.acquire(blocking=first or force):
            return
        try:
            now_s = self._clock_s()
            if not force and self._last_scan_s is not None \
                    and now_s - self._last_scan_s < self.rescan_interval_s:
                return
            found = self._scan()
            with self._lock:
                new: dict[str, RunHandle] = {}
                for name, path in found.items():
                    ident = file_identity(path, self.root)
                    if ident is None:
                        continue
                    old = self._handles.get(name)
                    if old is not None and old.path == path and old.identity == ident:
                        new[name] = old
                    else:
                        new[name] = RunHandle(name, path, ident, self.root)
                self._handles = new
            self._last_scan_s = self._clock_s()
        finally:
            self._scan_lock.release()

    # -- lookups ----------------------------------------------------------------------------

    def _fresh(self, handle: RunHandle) -> RunHandle | None:
        """``handle`` if its file is unchanged, a new handle if it was replaced, None if gone
        (or now resolving outside the logdir).

        Dropping the old handle closes its connection once the last request using it ends
        (SQLite connections close when collected), so nobody reads from a closed connection.
        """
        ident = file_identity(handle.path, handle.root)
        if ident == handle.identity:
            return handle
        with self._lock:
            current = self._handles.get(handle.name)
            if current is not None and current.path == handle.path and current.identity == ident:
                return current  # another request already swapped it in
            if ident is None:
                if current is not None and current.path == handle.path:
                    del self._handles[handle.name]
                return None
            fresh = RunHandle(handle.name, handle.path, ident, handle.root)
            self._handles[handle.name] = fresh
            return fresh

    def handles(self) -> list[RunHandle]:
        """Current handles of every discovered run, sorted by name."""
        self.rescan()
        with self._lock:
            snapshot = list(self._handles.values())
        out = [h for h in (self._fresh(h) for h in snapshot) if h is not None]
        return sorted(out, key=lambda h: h.name)

    def run_names(self) -> list[str]:
        """Names of the discovered runs (readable or not), sorted."""
        return [h.name for h in self.handles()]

    def has_runs(self) -> bool:
        """Whether any run store exists; cheap enough for TensorBoard's ``is_active()``."""
        self.rescan()
        with self._lock:
            return bool(self._handles)

    def get(self, name: object) -> RunHandle:
        """The current handle of run ``name``; :class:`ApiError` 400/404 otherwise.

        ``name`` is compared as a string with discovered names only, so ``..``, absolute paths
        or encoded separators cannot reach the file system.
        """
        if name is None or name == "":
            raise ApiError(BAD_REQUEST, "missing parameter 'run'", self.run_names())
        self.rescan()
        with self._lock:
            handle = self._handles.get(name) if isinstance(name, str) else None
        if handle is not None:
            handle = self._fresh(handle)
        if handle is None:
            raise ApiError(NOT_FOUND, f"unknown run {show(name)}", self.run_names())
        return handle
