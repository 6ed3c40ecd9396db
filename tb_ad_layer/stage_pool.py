"""Convert the stages of a dump directory in worker processes, chained only where they chain
(and read a multi-GPU run's rank traces the same way: :func:`tb_ad_layer.trace_attach.ingest_rank`,
tasks that do not chain).

Each stage is read, parsed, layered and turned into encoded documents by one worker
(``work``); what a stage hands the next one (its layers, which the next stage carries when its
own names cannot say them) goes through the coordinating process as soon as the stage is
layered, so the only part that waits on another stage is the layering of a stage that asks for
its predecessor's layers. Results come back in stage order, with the progress lines each worker
printed, so the caller stores and reports them exactly as a serial run would; a stage that fails
raises its error when its turn comes (after every earlier stage), as it would serially.

Workers are spawned (not forked: the parent may hold threads and an open SQLite file) and each
holds one stage at a time; at most ``2 * jobs`` finished stages wait for their turn, so memory is
bounded per worker whatever the number of stages. Everything that crosses processes is plain
values (tuples, dicts, bytes, ``msgspec`` records): the converter's compiled classes are not
picklable across builds.
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import signal
import traceback
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from types import TracebackType
from typing import Any, Generic, TypeVar

from tb_ad_layer.errors import InputError
from tb_ad_layer.progress import Progress

Task = TypeVar("Task")
Result = TypeVar("Result")

#: A progress line a worker printed: ("info" | "warn", text).
Line = tuple[str, str]
#: What a stage's work does: ``work(task, fetch, publish, progress)``. ``fetch()`` returns what
#: the previous task published (waiting for it); ``publish(value)`` hands a value to the next
#: task, once, as early as it can; ``progress`` collects the lines to print.
Work = Callable[[Task, Callable[[], Any], Callable[[Any], None], Progress], Result]


class _Lines(Progress):
    """A progress printer that keeps the lines for the coordinator to print in stage order."""

    def __init__(self) -> None:
        super().__init__(quiet=False)
        self.lines: list[Line] = []

    def __call__(self, message: str) -> None:
        self.lines.append(("info", message))

    def warn(self, message: str) -> None:
        self.lines.append(("warn", message))


def _error_payload(e: BaseException) -> tuple[str, Any]:
    """An exception as it crosses back: an :class:`InputError` by its fields (so the parent
    raises the same one line), anything else pickled if it can be, else as its traceback."""
    if isinstance(e, InputError):
        return "input", (e.message, e.path, e.line, e.field)
    import pickle
    try:
        pickle.dumps(e)
        return "pickled", e
    except Exception:
        return "text", "".join(traceback.format_exception(e))


def _raise(payload: tuple[str, Any]) -> None:
    kind, value = payload
    if kind == "input":
        message, path, line, field = value
        raise InputError(message, path=path, line=line, field=field)
    if kind == "pickled":
        raise value
    raise RuntimeError(f"a conversion worker failed:\n{value}")


def _worker(conn: Connection, work: Work[Any, Any]) -> None:
    """A worker's loop: take ``(k, task)``, run ``work``, send its result (or error).

    Ctrl-C reaches every process of the terminal's group: the worker ignores it, and the parent,
    which decides what an interruption means, ends the workers."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message is None or not _run_task(conn, work, *message):
            return


def _run_task(conn: Connection, work: Work[Any, Any], k: int, task: Any) -> bool:
    """Run task ``k`` and send its result, or its error; False when the worker must stop (it
    was interrupted, not failed)."""
    lines = _Lines()
    published = False

    def fetch() -> Any:
        conn.send(("fetch", k, None))
        return conn.recv()

    def publish(value: Any) -> None:
        nonlocal published
        if not published:
            published = True
            conn.send(("publish", k, value))

    try:
        result = work(task, fetch, publish, lines)
    except BaseException as e:  # noqa: BLE001 - every failure goes back to the parent
        conn.send(("error", k, (lines.lines, _error_payload(e))))
        return isinstance(e, Exception)
    conn.send(("done", k, (lines.lines, result)))
    return True


class StagePool(Generic[Task, Result]):
    """``jobs`` spawned workers running ``work`` over ``tasks``; a context manager whose exit
    ends every worker (and waits for it), however the caller leaves."""

    def __init__(self, work: Work[Task, Result], tasks: Sequence[Task], jobs: int) -> None:
        self.work = work
        self.tasks = list(tasks)
        self.jobs = max(1, min(jobs, len(self.tasks)))
        self._procs: list[tuple[BaseProcess, Connection]] = []

    def __enter__(self) -> StagePool[Task, Result]:
        ctx = multiprocessing.get_context("spawn")
        try:
            for _ in range(self.jobs):
                parent, child = ctx.Pipe()
                proc = ctx.Process(target=_worker, args=(child, self.work), daemon=True,
                                   name="tb-ad-layer-convert")
                proc.start()
                child.close()
                self._procs.append((proc, parent))
        except BaseException:
            self._stop(kill=True)
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop(kill=exc_type is not None)

    def _stop(self, kill: bool) -> None:
        for proc, conn in self._procs:
            if not kill:
                try:
                    conn.send(None)
                except OSError:
                    pass
            else:
                proc.terminate()
        for proc, conn in self._procs:
            proc.join(timeout=None if kill else 30)
            if proc.is_alive():
                proc.kill()
                proc.join()
            conn.close()
        self._procs = []

    def results(self, progress: Progress) -> Iterator[Result]:
        """Each task's result in task order, after printing the lines its work printed; a
        task that failed raises its error in its turn."""
        n = len(self.tasks)
        window = 2 * self.jobs
        idle = [conn for _, conn in self._procs]
        busy: dict[Connection, int] = {}
        published: dict[int, Any] = {}
        # The tasks that have published: done with their predecessor's value.
        released: set[int] = set()
        waiting: dict[int, Connection] = {}
        finished: dict[int, tuple[str, Any]] = {}
        assigned = 0
        for k in range(n):
            while k not in finished:
                while idle and assigned < n and assigned < k + window:
                    conn = idle.pop()
                    conn.send((assigned, self.tasks[assigned]))
                    busy[conn] = assigned
                    assigned += 1
                for ready in multiprocessing.connection.wait(list(busy)):
                    assert isinstance(ready, Connection)
                    conn = ready
                    try:
                        kind, j, value = conn.recv()
                    except EOFError:
                        raise RuntimeError("a conversion worker exited unexpectedly") from None
                    if kind == "fetch":
                        if j - 1 in published:
                            conn.send(published[j - 1])
                        else:
                            waiting[j] = conn
                    elif kind == "publish":
                        # Task j is done with its predecessor's value; its own is kept until
                        # task j + 1 is done with it.
                        released.add(j)
                        published.pop(j - 1, None)
                        if j + 1 in waiting:
                            waiting.pop(j + 1).send(value)
                        if j + 1 not in released:
                            published[j] = value
                    else:
                        finished[j] = (kind, value)
                        del busy[conn]
                        idle.append(conn)
            kind, (lines, value) = finished.pop(k)
            for level, text in lines:
                (progress.warn if level == "warn" else progress)(text)
            if kind == "error":
                _raise(value)
            yield value


def run_in_process(work: Work[Task, Result], tasks: Sequence[Task],
                   progress: Progress) -> Iterator[Result]:
    """What :class:`StagePool` does, in this process, one task after another: the serial
    conversion, and the reference a parallel one must equal."""
    previous: list[Any] = [None]

    def fetch() -> Any:
        return previous[0]

    def publish(value: Any) -> None:
        previous[0] = value

    for task in tasks:
        yield work(task, fetch, publish, progress)
