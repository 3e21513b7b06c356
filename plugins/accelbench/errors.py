"""Typed errors: each names the field and value at fault so a task log says what to fix."""


class AccelbenchError(Exception):
    """Base class for every error the library raises on purpose."""


class ConfigError(AccelbenchError):
    """A setting (environment variable, param, connection) has a bad value."""

    def __init__(self, field: str, value: object, why: str) -> None:
        self.field, self.value, self.why = field, value, why
        super().__init__(f"{field}={value!r}: {why}")


class UnknownRegion(ConfigError):
    def __init__(self, region: str, field: str = "region") -> None:
        super().__init__(field, region, "not an AWS region known to botocore")


class UnknownInstanceType(ConfigError):
    def __init__(self, instance_type: str, field: str = "instance_type") -> None:
        super().__init__(field, instance_type, "not in the instance catalog")


class UnsupportedInstanceType(ConfigError):
    """An instance type the suite refuses (e.g. Graviton2), with the reason."""


class CatalogUnavailable(AccelbenchError):
    """The catalog database cannot be reached or opened."""


class PodNotScheduled(AccelbenchError):
    """A benchmark pod found no node before its schedule timeout (no capacity, taints, requirements)."""
