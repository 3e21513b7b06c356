"""The report's one builder of points: the lake's rows to typed points, each with its searched capacity, its
configuration's quality, its SLO verdict and its start-up (`accelbench.report.model.Point`), where five
marking passes over dicts used to add them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from accelbench.core.price import Price
from accelbench.core.slos import Slos
from accelbench.lake.schemas import LakeRow
from accelbench.report.model import Capacity, Point
from accelbench.report.points import comparison_id, level_points
from accelbench.report.quality import grade
from accelbench.report.samples import Samples
from accelbench.report.searches import searched_labels
from accelbench.report.slos import slo_judgement
from accelbench.report.startups import median_startup, ready_by_spec


def build_points(
    runs: Iterable[LakeRow],
    prices: Sequence[Price],
    region: str,
    slos: Slos,
    samples: Samples | None = None,
    *,
    searched: Sequence[Capacity] = (),
    quality: Sequence[Mapping[str, Any]] = (),
    startups: Iterable[Mapping[str, Any]] = (),
) -> list[Point]:
    """The report's points (`accelbench.report.points.level_points`), each with the label of the load
    searches whose capacity it is (`searched`: the capacities table's rows, `accelbench.report.searches`),
    its configuration's quality and gate (`quality`: the lake's rows, `accelbench.report.quality`), its
    three-valued verdict against `slos` (`accelbench.report.slos.slo_judgement`) and its median start-up
    (`startups`: the lake's rows)."""
    labels = searched_labels(searched)
    runs = list(runs)
    ready = ready_by_spec(startups, runs)
    out = []
    for p in level_points(runs, prices, region, samples):
        graded, reference = grade(p, quality)
        p = replace(
            p,
            searched_capacity="; ".join(labels.get(p.point_id, ())) or None,
            quality=graded,
            comparison_id=comparison_id(p.config, reference) if reference else p.comparison_id,
            startup_s=median_startup(p.run_ids, ready),
        )
        verdict, why = slo_judgement(p, slos)
        out.append(replace(p, slo_verdict=verdict, slo_why="; ".join(why) or None))
    return out
