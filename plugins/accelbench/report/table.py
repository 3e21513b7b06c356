"""What a report table is: its name, how it is computed, its HTML columns, its section of the page and
its files. The tables themselves, one module each, are registered in order in `accelbench.report.tables`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from accelbench.decisions import Decision
from accelbench.lake.schemas import LakeRow
from accelbench.report.model import Capacity, Point
from accelbench.report.records import Record
from accelbench.report.samples import Samples

if TYPE_CHECKING:
    from accelbench.report.slos import BestPoint
    from accelbench.report.trends import TrendPoint


@dataclass(frozen=True)
class Inputs:
    """What every table is computed from (`accelbench.report.build.gather` makes it from the lake's rows).

    `runs`: the runs the filter keeps and nobody retracted; `retracted`: the ones retracted, each with
    `retraction_reason` and `superseded_by`; `capacities`: the load searches' rows as the report shows
    them (`accelbench.report.searches.capacity_rows`); `points`: one per load level of a configuration
    (`accelbench.report.builder.build_points`), typed; `best`: per configuration, the best level under the
    SLOs, cheapest first (`accelbench.report.slos.best_under_slos`);
    `samples`: the kept runs' request samples (`accelbench.report.samples`), empty when none were read;
    `quality`: the quality rows the filter keeps (`accelbench.lake.quality`), already on their points;
    `costs`: the costs rows the filter keeps (what each server of a campaign cost, `accelbench.lake.costs`);
    `decisions`: the owners' answers to the regressions of the filter's models (`accelbench.decisions`);
    `previous`: the previous report of the same filter's answer cards as its `cards` file holds them (none:
    no such report, or one from before the cards);
    `trends`: each series' best level under the SLOs campaign by campaign (`accelbench.report.trends`).
    """

    runs: list[LakeRow] = field(default_factory=list)
    retracted: list[LakeRow] = field(default_factory=list)
    capacities: list[Capacity] = field(default_factory=list)
    points: list[Point] = field(default_factory=list)
    best: list[BestPoint] = field(default_factory=list)
    samples: Samples = Samples.EMPTY
    quality: list[LakeRow] = field(default_factory=list)
    costs: list[LakeRow] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    previous: list[Record] = field(default_factory=list)
    trends: list[TrendPoint] = field(default_factory=list)


def _no_variables(rows: Sequence[Record]) -> Mapping[str, Any]:
    return {}


@dataclass(frozen=True)
class Section:
    """A table's part of the report page (templates/report.html.j2 renders them in the registry's order).

    `text` and `body` are Jinja sources (autoescaped), rendered with `rows` (the table's), `columns`,
    `section` (this object), `anchor` (`Table.anchor`), `slos` (the page's SLOs,
    `accelbench.report.slos.Slos`), the `table` macro of templates/table.html.j2 and what
    `variables(rows)` adds. `text` is what the section says under its
    heading; `body` replaces the one HTML table (`table_id`) where a section shows more (the headline's
    answers, the cross-tier groups). `then` names templates rendered after the section whether it is
    shown or not (the capacity planner and the plots follow the capacity table)."""

    heading: str
    text: str
    table_id: str
    anchor: str | None = None  # the heading's id (a link to the section ends in #anchor); None: the name
    level: int = 2  # h2; h3 for a part of the section before it
    scroll: bool = True  # False: the table fits the page's width, without a scroll box
    # What measures this table when it has no rows (its section is not drawn then): a line of the page lists
    # these, each with the campaign field that would measure it. None: an empty table needs no word.
    unmeasured: str | None = None
    lead: str = ""  # one short visible line under the heading; `text` (the method) is behind a disclosure
    body: str | None = None
    variables: Callable[[Sequence[Record]], Mapping[str, Any]] = _no_variables  # of the page's rows
    then: tuple[str, ...] = ()


@dataclass(frozen=True)
class Table:
    """One table of the report: `build_report` computes it, `write_report` writes its files (Parquet
    with the rows' own column names, CSV with `accelbench.report.columns.label` headers), `render_html`
    shows its `columns` in its `section`; summary.json counts its rows under `name`, and the Benchmarks
    view's list of reports shows that count under `listed_as` when it has one."""

    name: str  # the files' stem, the key of build_report's dict and of summary.json's rows
    compute: Callable[[Inputs], Sequence[Any]]  # typed rows (dataclasses), or dicts where not typed yet
    columns: tuple[str, ...]  # the HTML table's, in order; the files hold every field of the rows
    section: Section
    listed_as: str | None = None
    # The type of the rows `compute` returns: the files' columns are its (`accelbench.report.records.columns`)
    # and the HTML columns are among them. None: a table whose rows are not typed yet (dicts).
    row: type | None = None

    @property
    def anchor(self) -> str:
        """The id of the section's heading: a link to the section ends in #anchor."""
        return self.section.anchor or self.name

    @property
    def parquet(self) -> str:
        return f"{self.name}.parquet"

    @property
    def csv(self) -> str:
        return f"{self.name}.csv"

    @property
    def files(self) -> tuple[str, str]:
        return (self.parquet, self.csv)
