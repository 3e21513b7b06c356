"""Where the repository and its DAG folder are, for tests wherever they sit under tests/."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DAGS = REPO / "dags"
DAG_IDS = {p.stem for p in DAGS.glob("accelbench_*.py")}  # each DAG file's DAG is named by its file
