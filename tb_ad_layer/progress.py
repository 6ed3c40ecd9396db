"""Progress lines for long conversions, on stderr so stdout stays clean for data."""
from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """Prints timestamped progress lines unless quiet."""

    def __init__(self, quiet: bool = False, stream: TextIO | None = None) -> None:
        self.quiet = quiet
        self.stream = stream if stream is not None else sys.stderr
        self.start_s = time.perf_counter()

    def __call__(self, message: str) -> None:
        if not self.quiet:
            print(f"[{time.perf_counter() - self.start_s:7.2f}s] {message}", file=self.stream,
                  flush=True)

    def warn(self, message: str) -> None:
        """Warnings are printed even when quiet: they say something about the result."""
        print(f"tb-ad-layer: warning: {message}", file=self.stream, flush=True)


def quiet_progress() -> Progress:
    """A progress printer that prints warnings only."""
    return Progress(quiet=True)
