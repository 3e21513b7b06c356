"""The SLOs the report judges levels by: they live in `accelbench.core.slos` (the load search in
`accelbench.core.search` judges its probes by the same rule) and are re-exported here for the report's
modules and the DAG files that import them at parse time."""

from accelbench.core.slos import DEFAULT_MAX_ERROR_RATE, LIMITS, Limit, Slos

__all__ = ["DEFAULT_MAX_ERROR_RATE", "LIMITS", "Limit", "Slos"]
