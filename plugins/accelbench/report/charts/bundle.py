"""The charting library in the page, and the charts as static SVG beside it (vl-convert-python).

The page carries Vega, Vega-Lite and Vega-Embed inline (no CDN: it opens offline and inside the Airflow
UI's Benchmarks view) from `vega.js.gz`, the bundle `vl_convert.javascript_bundle()` makes, written once by
`scripts/vega_bundle.py`: making it takes vl-convert 1.5-4 s per process, more than a whole small report's
build. Its first line names the versions; tests/unit/test_report_charts.py checks them against the
installed vl-convert's, so the page's JavaScript and the static SVGs draw with the same Vega.
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from importlib import resources

from markupsafe import Markup

from accelbench.report.charts.spec import Spec

BUNDLE = "vega.js.gz"
VEGA_LITE = "6.4"  # the Vega-Lite version of the specs, the bundle and the static SVGs

# Draws each chart of the page from its spec (a JSON <script> beside its box): SVG renderer (its text is
# in the DOM), tooltips on hover, no action menu (the static SVGs are written beside the report).
_EMBED = """
document.querySelectorAll('script[type="application/json"][data-chart]').forEach(function (el) {
  var box = document.getElementById(el.dataset.chart);
  vegaEmbed(box, JSON.parse(el.textContent), {renderer: "svg", actions: false})
    .then(function () { box.dataset.drawn = "yes"; })
    .catch(function (err) { box.textContent = "This chart could not be drawn: " + err; });
});
"""


def versions() -> str:
    """The versions the bundle holds, as its first line says them."""
    import vl_convert

    return (
        f"vega {vl_convert.get_vega_version()}, vega-lite {VEGA_LITE}, "
        f"vega-embed {vl_convert.get_vega_embed_version()}"
    )


def make_bundle() -> bytes:
    """The gzipped bundle as `scripts/vega_bundle.py` writes it (no timestamp: the same bytes each time)."""
    import vl_convert

    # None: the default snippet (vegaEmbed, vegaLite, vega on window); the stub says str, the function not
    made = vl_convert.javascript_bundle(None, vl_version=VEGA_LITE)  # type: ignore[arg-type]
    text = f"/* {versions()} (vl-convert-python) */\n" + made
    return gzip.compress(text.encode(), mtime=0)


@cache
def bundle_js() -> str:
    return gzip.decompress(resources.files(__package__).joinpath(BUNDLE).read_bytes()).decode()


def _script_safe(text: str) -> str:
    """The bundle as is, checked: a "</script" or "<!--" in it would end or comment out its element (the
    bundle has neither; a new one that did is refused here, not found broken in a browser)."""
    lowered = text.lower()
    if "</script" in lowered or "<!--" in lowered:
        raise ValueError(f"{BUNDLE} holds '</script' or '<!--': it cannot go inline as it is")
    return text


def page_script() -> Markup:
    """The library and the code that draws every chart: once per page, after the charts' boxes."""
    return Markup(f"<script>{_script_safe(bundle_js())}</script>\n<script>{_EMBED}</script>")


def spec_json(spec: Spec) -> str:
    """The spec as JSON safe inside a <script> element (<, > and & escaped as JSON escapes)."""
    text = json.dumps(spec, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def static_svg(spec: Spec) -> str:
    """The chart as a static SVG (what the page shows before any click), drawn by vl-convert's Vega."""
    import vl_convert

    return str(vl_convert.vegalite_to_svg(spec, vl_version=VEGA_LITE))
