"""The one error the plugin's data layer raises for a bad request.

It carries what the API contract promises (docs/API.md): an HTTP status, a one-line message and
the list of values that do exist, so the panel can say "unknown layer 99 (layers: 0-60)" and
offer the valid choices instead of a bare failure.
"""
from __future__ import annotations

from typing import Any, Iterable


class ApiError(Exception):
    """A request the data layer refuses: 400 (bad or missing parameter), 404 (unknown run, stage,
    layer or file) or 503 (a run store that is being replaced right now; retrying helps)."""

    def __init__(self, status: int, message: str, known: Iterable[Any] = ()) -> None:
        # Messages may quote request text; keep them on one line whatever the input held.
        self.status = status
        self.message = " ".join(message.split())
        self.known = list(known)
        super().__init__(self.message)

    def body(self) -> dict[str, Any]:
        """The JSON error body of the API contract."""
        return {"error": self.message, "known": self.known}


def show(value: object, limit: int = 60) -> str:
    """A request value quoted for an error message, cut short so a huge parameter cannot make a
    huge error body."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "...'"
