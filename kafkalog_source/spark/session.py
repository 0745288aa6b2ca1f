"""A local SparkSession set up for kafkalog: quiet, UTC, the venv's Python, the source registered.

Settings come from ``conf/spark-defaults.conf`` (settings for any deployment), then
``conf/spark-local.conf`` (loopback driver, small shuffles: local runs only) and
``conf/log4j2.properties``, at the repository root (or the directory named by
``KAFKALOG_CONF_DIR``). When kafkalog is installed without them,
a built-in copy of the essential settings is used and Spark keeps its own logging defaults.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SPARK_DEFAULTS = "spark-defaults.conf"
SPARK_LOCAL = "spark-local.conf"
LOG4J2 = "log4j2.properties"

# Used when conf/spark-defaults.conf is not available (e.g. a wheel install).
FALLBACK_CONF: dict[str, str] = {
    "spark.sql.python.filterPushdown.enabled": "true",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}


def conf_dir() -> Path | None:
    """The directory holding spark-defaults.conf, or None when there is none."""
    candidates = []
    if os.environ.get("KAFKALOG_CONF_DIR"):
        candidates.append(Path(os.environ["KAFKALOG_CONF_DIR"]))
    candidates.append(Path(__file__).resolve().parents[2] / "conf")
    for c in candidates:
        if (c / SPARK_DEFAULTS).is_file():
            return c
    return None


def read_spark_defaults(path: Path) -> dict[str, str]:
    """Parse a spark-defaults.conf file: ``key value`` (or ``key=value``) lines, ``#`` comments."""
    out: dict[str, str] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", "!")):
            continue
        parts = line.split(None, 1)
        key = parts[0]
        value = parts[1].strip() if len(parts) > 1 else ""
        if "=" in key:
            key, _, rest = key.partition("=")
            value = (rest + (" " + value if value else "")).strip()
        elif value.startswith(("=", ":")):
            value = value[1:].strip()
        out[key] = value
    return out


def session_conf(extra_conf: dict[str, str] | None = None) -> dict[str, str]:
    """The Spark settings local_session applies: the conf files, then ``extra_conf``."""
    directory = conf_dir()
    conf = read_spark_defaults(directory / SPARK_DEFAULTS) if directory else dict(FALLBACK_CONF)
    if directory and (directory / SPARK_LOCAL).is_file():
        conf.update(read_spark_defaults(directory / SPARK_LOCAL))
    if directory and (directory / LOG4J2).is_file():
        option = f"-Dlog4j2.configurationFile={(directory / LOG4J2).as_uri()}"
        current = conf.get("spark.driver.extraJavaOptions", "")
        conf["spark.driver.extraJavaOptions"] = f"{current} {option}".strip()
    for key, value in (extra_conf or {}).items():
        conf[key] = str(value)
    return conf


def _python_path_for_workers() -> None:
    """Let Python workers import kafkalog_source even when it is not installed (a repo run)."""
    root = str(Path(__file__).resolve().parents[2])
    current = os.environ.get("PYTHONPATH", "")
    if root not in current.split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, current) if p)


def local_session(
    app_name: str, master: str = "local[2]", extra_conf: dict | None = None
) -> SparkSession:
    """Build (or reuse) a local SparkSession with kafkalog's settings and the source registered."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    _python_path_for_workers()

    from pyspark.sql import SparkSession

    from .datasource import KafkaLogDataSource

    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in session_conf(extra_conf).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    # Also auto-discovered via the pyspark_kafkalog module when installed; registering twice is
    # harmless and makes a repo checkout work without installing.
    spark.dataSource.register(KafkaLogDataSource)
    return spark
