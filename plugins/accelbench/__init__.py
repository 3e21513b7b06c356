"""accelbench: the library behind the accelbench-campaigns DAGs (no Airflow imports here)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("accelbench-campaigns")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+source"
