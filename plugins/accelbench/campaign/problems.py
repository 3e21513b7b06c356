"""Planning problems: each names a field and its value; one error carries all of them."""

from __future__ import annotations

from dataclasses import dataclass

from accelbench.errors import AccelbenchError


@dataclass(frozen=True)
class Problem:
    field: str
    value: object
    message: str

    def __str__(self) -> str:
        return f"{self.field}={self.value!r}: {self.message}"


class PlanningError(AccelbenchError):
    """Every reason a campaign cannot run, found before anything is launched."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        lines = "\n".join(f"- {p}" for p in problems)
        super().__init__(f"campaign refused, {len(problems)} problem(s):\n{lines}")
