"""One colour per configuration across every chart of a page, from a colour-blind-safe palette.

The colours are Okabe and Ito's (distinct under the common colour-vision deficiencies), black left out
for the SLO and front lines; local-host series are greys, in the back. A page's series names (`series`
in every chart's data) are sorted, instance series first, and take the palette in that order, so the
same configuration has the same colour in every chart of the page, and the same tables the same colours.
Past eight configurations the colours repeat; the legend and the tooltip still name each.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from accelbench.report.charts.spec import SERIES, Spec

OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#F0E442", "#999933")
LOCAL_GREYS = ("#595959", "#8c8c8c", "#404040", "#a6a6a6", "#737373")
_LOCAL = ("(local host)",)


def _series(spec: Spec) -> Iterator[str]:
    for rows in spec.get("datasets", {}).values():
        for row in rows:
            if row.get(SERIES) is not None:
                yield str(row[SERIES])


def colours(names: Iterable[str]) -> dict[str, str]:
    """Each name's colour: instance series from the palette, local ones grey, in sorted order."""
    unique = sorted(set(names))
    local = [n for n in unique if n.endswith(_LOCAL)]
    instance = [n for n in unique if not n.endswith(_LOCAL)]
    found = {n: OKABE_ITO[i % len(OKABE_ITO)] for i, n in enumerate(instance)}
    return found | {n: LOCAL_GREYS[i % len(LOCAL_GREYS)] for i, n in enumerate(local)}


def _scale_series(node: Any, scale: Spec) -> None:
    """Every colour encoding of `series` under `node` takes `scale`."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("color", "stroke", "fill") and isinstance(value, dict):
                for channel in (value, value.get("condition")):
                    if isinstance(channel, dict) and channel.get("field") == SERIES:
                        channel["scale"] = scale
            else:
                _scale_series(value, scale)
    elif isinstance(node, list):
        for item in node:
            _scale_series(item, scale)


def paint(specs: Iterable[Spec | None]) -> None:
    """Give every chart of a page the page's colours (each chart's scale lists its own series only, so its
    legend does too)."""
    shown = [s for s in specs if s is not None]
    found = colours(name for s in shown for name in _series(s))
    for spec in shown:
        mine = sorted(set(_series(spec)), key=lambda n: (n.endswith(_LOCAL), n))
        _scale_series(spec, {"domain": mine, "range": [found[n] for n in mine]})
