"""One server and the workloads it serves in turn: the unit a benchmark task runs (issue 49).

A configuration (instance type, runtime and version, checkpoint and quantization, engine arguments, TP; an
A/B variant's round) starts one server, and each of its workloads' specs runs on it in the plan's order,
each with its own warm-up, levels, repeats or search. The specs stay what they were: each workload keeps its
spec_id, matrix key, raw evidence and lake rows; only the server start is shared.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field, model_validator

from accelbench.core.spec import BenchmarkSpec, ServerSpec


class ServerGroup(BaseModel):
    """The specs one server runs, in order (at least one): the same server, campaign and A/B round."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    specs: tuple[BenchmarkSpec, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _one_server(self) -> ServerGroup:
        first = self.specs[0]
        for i, spec in enumerate(self.specs[1:], start=1):
            if group_key(spec) != group_key(first):
                raise ValueError(
                    f"specs[{i}] ({spec.spec_id}) needs another server than specs[0] ({first.spec_id}): "
                    "a group is one server's workloads"
                )
        ids = [s.spec_id for s in self.specs]
        if len(set(ids)) != len(ids):
            raise ValueError(f"a spec twice in one group: {ids}")
        return self

    @property
    def server(self) -> ServerSpec:
        return self.specs[0].server

    @property
    def group_id(self) -> str:
        """Deterministic: the same specs in the same order always make the same id."""
        digest = hashlib.sha256(" ".join(s.spec_id for s in self.specs).encode()).hexdigest()[:12]
        return f"{self.server.instance_type.replace('.', '-')}-{digest}"

    def workloads(self) -> str:
        """E.g. "chat, shared-prefix": the workloads in the order the server runs them."""
        return ", ".join(s.load.runs.name for s in self.specs)


def group_key(spec: BenchmarkSpec) -> str:
    """What makes two specs need two servers: the server itself, the campaign, an A/B variant's round (two
    rounds of one variant are two servers by design: the host's drift falls on every variant alike)."""
    variant = spec.variant.model_dump_json() if spec.variant is not None else ""
    return f"{spec.campaign_id}\n{spec.server.model_dump_json()}\n{variant}"


def group_specs(specs: Sequence[BenchmarkSpec]) -> list[ServerGroup]:
    """The plan's specs as servers: specs that share a server (`group_key`) in one group; within a group the
    plan's order of workloads. The groups in the order their pods start (`by_instance_type`)."""
    groups: dict[str, list[BenchmarkSpec]] = {}
    for spec in specs:
        groups.setdefault(group_key(spec), []).append(spec)
    return by_instance_type([ServerGroup(specs=tuple(members)) for members in groups.values()])


def by_instance_type(groups: Sequence[ServerGroup]) -> list[ServerGroup]:
    """Each instance type's servers one after another, the types in the order of their first server, the
    plan's order within a type: the benchmark tasks are mapped in this order and start in it (Airflow queues
    a mapped task's instances by map index), so in kubernetes mode a pod's node, launched for the first pod
    of its type, and the server image already pulled on it serve the next pod of the type, which starts
    within the NodePool's `consolidateAfter` (a version campaign's versions, a quantization matrix's
    checkpoints: on one node each type). An A/B comparison keeps its rounds' order (a1, b1, a2, b2: the
    host's drift falls on every variant alike), whatever its variants' types."""
    if any(s.variant is not None for g in groups for s in g.specs):
        return list(groups)
    order = {t: k for k, t in enumerate(dict.fromkeys(g.server.instance_type for g in groups))}
    return sorted(groups, key=lambda g: order[g.server.instance_type])  # stable: the plan's order within
