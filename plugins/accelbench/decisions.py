"""An owner's answer to the regressions the regression gate found in a version: the approval step's two
options, and what a standing answer means for the next campaign of that version.

Accepted: the regressions it names (each a point, the two versions compared and a metric:
`accelbench.regression.regressions.regression_keys`) are known; a gate that finds only those does not ask
again. A regression it does not name (another point, metric or baseline version) is asked about. Rejected: the
version is not measured again (unless forced) and its gate does not ask again. The newest answer for a
model and version stands: clearing the approval task in Airflow asks again, and its answer replaces the old.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

ACCEPT = "Accept as known"  # the approval step's options, as the owner sees them
REJECT = "Reject the version"
OPTIONS = (ACCEPT, REJECT)
DecisionKind = Literal["accepted", "rejected"]
OF_OPTION: dict[str, DecisionKind] = {ACCEPT: "accepted", REJECT: "rejected"}


@dataclass(frozen=True)
class Decision:
    runtime: str
    version: str
    model: str
    decision: DecisionKind
    reason: str
    regressions: tuple[str, ...]  # the keys of the regressions the owner saw
    decided_by: str | None
    decided_at: datetime
    dag_run_id: str

    def text(self) -> str:
        who = f" by {self.decided_by}" if self.decided_by else ""
        when = self.decided_at.strftime("%Y-%m-%d %H:%M UTC")
        what = "accepted as known" if self.decision == "accepted" else "rejected"
        return f"{self.runtime} {self.version} {what}{who} on {when}: {self.reason}"


def standing(decisions: Iterable[Decision], model: str, version: str) -> Decision | None:
    """The newest decision about `version` of `model`, if any."""
    mine = [d for d in decisions if d.model == model and d.version == version]
    return max(mine, key=lambda d: d.decided_at) if mine else None


def unanswered(keys: Sequence[str], decisions: Iterable[Decision], model: str, version: str) -> list[str]:
    """The regression keys no standing acceptance of `version` names: what the owner is asked about. A
    rejected version asks nothing (its answer stands)."""
    now = standing(decisions, model, version)
    if now is not None and now.decision == "rejected":
        return []
    known = {k for d in decisions if _accepts(d, model, version) for k in d.regressions}
    return [k for k in keys if k not in known]


def _accepts(d: Decision, model: str, version: str) -> bool:
    return d.model == model and d.version == version and d.decision == "accepted"


def answer(chosen: Sequence[str], reason: object) -> tuple[DecisionKind, str]:
    """The approval step's response as a decision and its reason; refused, naming the field, when it is not
    exactly one of OPTIONS or the reason is empty."""
    from accelbench.errors import ConfigError

    if len(chosen) != 1 or chosen[0] not in OF_OPTION:
        raise ConfigError("chosen_options", list(chosen), f"exactly one of {list(OPTIONS)}")
    text = reason.strip() if isinstance(reason, str) else ""
    if not text:
        raise ConfigError("reason", reason, "say why: it is recorded in the catalog and shown on the report")
    return OF_OPTION[chosen[0]], text
