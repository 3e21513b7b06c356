"""Planning problems: each names a field and its value; one error carries all of them. At the bottom layer:
every stage (the request check, the tiers, kubernetes mode's preflight) reports problems the same way."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationError

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


def problems_from_validation(exc: ValidationError) -> list[Problem]:
    """pydantic's errors as Problems: 'concurrency[2]' rather than ('concurrency', 2)."""
    out = []
    for err in exc.errors():
        field = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"]).lstrip(".")
        out.append(Problem(field or "request", err.get("input"), err["msg"]))
    return out
