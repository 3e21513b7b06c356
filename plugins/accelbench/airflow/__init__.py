"""The only part of accelbench that imports Airflow: assets, connections and task bodies."""
