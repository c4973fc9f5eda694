"""Bulk Kafka topic provisioning and auditing on Spark."""

__version__ = "0.1.0"


def package_version() -> str:
    """The version of the installed distribution (pyproject.toml's), or `__version__` when
    the package runs without being installed (the zips spark-submit.sh ships)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("topic-provisioning")
    except PackageNotFoundError:
        return __version__
