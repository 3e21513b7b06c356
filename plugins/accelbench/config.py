"""Settings read from the environment, so the library runs the same in a task, a pod or a shell."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from accelbench.errors import ConfigError

ENV_PREFIX = "ACCELBENCH_"
S3_ENDPOINT_SETTINGS = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")  # an S3-compatible lake, first wins
LAKE_SETTING = ENV_PREFIX + "LAKE_URI"  # a directory or s3://bucket/prefix; default: $ACCELBENCH_HOME/lake
DEFAULT_REGIONS = ("us-east-1",)
TRUE = {"1", "true", "yes", "on"}
FALSE = {"0", "false", "no", "off", ""}


def _env(name: str, default: str = "") -> str:
    return os.environ.get(ENV_PREFIX + name, default).strip()


def parse_bool(name: str, raw: str) -> bool:
    low = raw.lower()
    if low in TRUE:
        return True
    if low in FALSE:
        return False
    raise ConfigError(name, raw, "expected one of 1/0, true/false, yes/no, on/off")


@dataclass(frozen=True)
class Settings:
    """Every knob of the library, with the embedded defaults (no AWS, SQLite under home)."""

    home: Path
    catalog_url: str
    regions: tuple[str, ...] = DEFAULT_REGIONS
    offline: bool = False
    pricing_endpoint_region: str = "us-east-1"
    aws_max_attempts: int = 8
    seed_file: Path | None = None
    import_roots: tuple[Path, ...] = ()  # local directories the import DAG may read; empty = home/import
    registry_url: str = "https://hub.docker.com"  # Docker Hub tag-listing API of the vLLM CPU image
    include_prereleases: bool = False  # release discovery keeps rc/dev tags too

    @classmethod
    def from_env(cls) -> Settings:
        home = Path(_env("HOME") or Path.home() / ".accelbench").expanduser()
        url = _env("CATALOG_URL") or f"sqlite:///{home / 'catalog.db'}"
        regions = tuple(r.strip() for r in _env("REGIONS", ",".join(DEFAULT_REGIONS)).split(","))
        regions = tuple(r for r in regions if r)
        if not regions:
            raise ConfigError(ENV_PREFIX + "REGIONS", _env("REGIONS"), "names no region")
        attempts_raw = _env("AWS_MAX_ATTEMPTS", "8")
        try:
            attempts = int(attempts_raw)
        except ValueError:
            raise ConfigError(ENV_PREFIX + "AWS_MAX_ATTEMPTS", attempts_raw, "not an integer") from None
        seed = _env("SEED_FILE")
        return cls(
            home=home,
            catalog_url=url,
            regions=regions,
            offline=parse_bool(ENV_PREFIX + "OFFLINE", _env("OFFLINE", "false")),
            pricing_endpoint_region=_env("PRICING_ENDPOINT_REGION", "us-east-1"),
            aws_max_attempts=attempts,
            seed_file=Path(seed).expanduser() if seed else None,
            import_roots=tuple(
                Path(p.strip()).expanduser() for p in _env("IMPORT_ROOTS", "").split(",") if p.strip()
            )
            or (home / "import",),
            registry_url=_env("REGISTRY_URL", "https://hub.docker.com").rstrip("/"),
            include_prereleases=parse_bool(
                ENV_PREFIX + "INCLUDE_PRERELEASES", _env("INCLUDE_PRERELEASES", "false")
            ),
        )
