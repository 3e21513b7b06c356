"""Write (or check) the Vega bundle the report page carries: plugins/accelbench/report/charts/vega.js.gz.

Run after changing the vl-convert-python pin (constraints.txt):
  .venv/bin/python scripts/vega_bundle.py           rewrite the bundle
  .venv/bin/python scripts/vega_bundle.py --check   exit 1 when it is not the installed vl-convert's
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "plugins"))

from accelbench.report.charts.bundle import BUNDLE, make_bundle  # noqa: E402

TARGET = REPO / "plugins" / "accelbench" / "report" / "charts" / BUNDLE


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true")
    made = make_bundle()
    if parser.parse_args().check:
        if not TARGET.is_file() or TARGET.read_bytes() != made:
            sys.exit(f"{TARGET.relative_to(REPO)} is stale: run scripts/vega_bundle.py")
        return
    TARGET.write_bytes(made)
    print(f"wrote {TARGET.relative_to(REPO)} ({len(made):,} bytes gzipped)")


if __name__ == "__main__":
    main()
