"""The one error type that reaches the user as a one-line message instead of a traceback."""
from __future__ import annotations

from pathlib import Path


class InputError(Exception):
    """Bad input that the user can fix: names the file and, where known, the line or field.

    The CLI prints ``str(err)`` on one line and exits with status 2; nothing is written.
    """

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        self.field = field
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path
            if self.line is not None:
                where += f":{self.line}"
            if self.field is not None:
                where += f" [{self.field}]"
            where += ": "
        # One line, always: messages may quote input text with newlines in it.
        return (where + self.message).replace("\n", " ").replace("\r", " ")
