"""The one error the plugin's data layer raises for a request it cannot answer.

It carries what the API contract promises (docs/API.md): an HTTP status, a one-line message and
the list of values that do exist, so the panel can say "unknown layer 99 (layers: 0-60)" and
offer the valid choices instead of a bare failure.
"""
from __future__ import annotations

from collections.abc import Iterable

from tb_ad_layer.contract.api import ErrorBody

#: Statuses of the API's errors.
BAD_REQUEST = 400        # a missing or malformed parameter
NOT_FOUND = 404          # an unknown run, stage, layer, download or endpoint
NOT_ALLOWED = 405        # not GET or HEAD
UNREADABLE = 409         # the run exists but its store cannot be read as it is: the message
                         # says why and how to fix it (rebuild it, upgrade tb-ad-layer)


class ApiError(Exception):
    """A request the data layer refuses, with its HTTP status (see the constants above)."""

    def __init__(self, status: int, message: str, known: Iterable[str | int] = ()) -> None:
        # Messages may quote request text; keep them on one line whatever the input held.
        self.status = status
        self.message = " ".join(message.split())
        self.known = list(known)
        super().__init__(self.message)

    def body(self) -> ErrorBody:
        """The JSON error body of the API contract."""
        return ErrorBody(error=self.message, known=self.known)


def show(value: object, limit: int = 60) -> str:
    """A request value quoted for an error message, cut short so a huge parameter cannot make a
    huge error body."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "...'"
