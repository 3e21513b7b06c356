"""Airflow task bodies are adapters (params and XCom in, one library service, exceptions and XCom out): what a
task does is a library call, tested without Airflow. No function in plugins/accelbench/airflow/tasks/ is
longer than 25 lines, its docstring included."""

from __future__ import annotations

import ast

from tests.support.paths import REPO

TASKS = REPO / "plugins" / "accelbench" / "airflow" / "tasks"
MAX_LINES = 25


def test_no_task_body_is_over_25_lines() -> None:
    long = {}
    for path in sorted(TASKS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_LINES:
                    long[f"{path.name}::{node.name}"] = lines
    assert long == {}, f"over {MAX_LINES} lines: move the work into a library service"
