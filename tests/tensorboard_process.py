"""A real ``tensorboard`` process for tests and benchmarks: start it on a free loopback port, wait
until it answers (and until ``ready`` says so), and always stop it."""
from __future__ import annotations

import http.client
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(port: int, path: str, timeout: float = 20.0) -> tuple[int, bytes, dict[str, str]]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read(), {k.lower(): v for k, v in resp.getheaders()}
    finally:
        conn.close()


@dataclass(frozen=True)
class TensorBoardProcess:
    port: int
    prefix: str
    log: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.prefix}"

    def get(self, path: str, timeout: float = 20.0) -> tuple[int, bytes, dict[str, str]]:
        return http_get(self.port, f"{self.prefix}{path}", timeout)


@contextmanager
def running_tensorboard(logdir: Path, workdir: Path, *flags: str, prefix: str = "",
                        ready: Callable[[TensorBoardProcess], bool] | None = None,
                        deadline_s: float = 90.0, python: str = sys.executable,
                        env: dict[str, str] | None = None) -> Iterator[TensorBoardProcess]:
    """Run ``tensorboard --logdir logdir`` (plus ``flags``; ``--path_prefix`` from ``prefix``)
    until the block ends. Waits for ``data/plugins_listing`` to answer and ``ready`` to hold;
    fails with the tail of TensorBoard's log when it exits or misses the deadline.

    ``python`` and ``env``: the interpreter (another virtual environment's) and environment to
    run it with; by default this test process's."""
    port = free_port()
    log = workdir / f"tensorboard_{port}.log"
    host = [] if "--bind_all" in flags else ["--host", "127.0.0.1"]
    args = [python, "-m", "tensorboard.main", "--logdir", str(logdir), "--port",
            str(port), *host, *flags] + (["--path_prefix", prefix] if prefix else [])
    tb = TensorBoardProcess(port, prefix, log)
    with open(log, "wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, cwd=workdir, env=env)
        try:
            deadline = time.monotonic() + deadline_s
            while True:
                if proc.poll() is not None:
                    raise AssertionError(f"tensorboard exited with {proc.returncode}:\n"
                                         + log.read_text(errors="replace")[-3000:])
                try:
                    if tb.get("/data/plugins_listing", 2.0)[0] == 200 and (ready is None or ready(tb)):
                        break
                except (OSError, ValueError, KeyError):
                    pass  # still starting
                if time.monotonic() > deadline:
                    raise AssertionError(f"tensorboard was not ready within {deadline_s:.0f} s:\n"
                                         + log.read_text(errors="replace")[-3000:])
                time.sleep(0.25)
            yield tb
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=15)
