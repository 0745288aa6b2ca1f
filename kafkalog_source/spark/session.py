"""A local SparkSession set up for kafkalog: quiet, UTC, the venv's Python, the source registered.

Settings come from ``spark-defaults.conf`` (settings for any deployment), then
``spark-local.conf`` (loopback driver, small shuffles: local runs only) and
``log4j2.properties`` (errors only), in the package's own ``kafkalog_source/spark/conf/``
(package data, so a wheel install has them too; the repository's top-level ``conf/`` holds
identical copies for spark-submit), or in the directory named by ``KAFKALOG_CONF_DIR``. Should
neither have them, a built-in copy of the essential settings is used and Spark keeps its own
logging defaults.
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

PACKAGE_CONF = Path(__file__).resolve().parent / "conf"

# Used when no spark-defaults.conf is found (the package data is missing).
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
    candidates.append(PACKAGE_CONF)
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
    app_name: str,
    master: str = "local[2]",
    extra_conf: dict | None = None,
    own_python: bool = False,
    env: dict[str, str] | None = None,
) -> SparkSession:
    """Build (or reuse) a local SparkSession with kafkalog's settings and the source registered.

    Spark starts its Python workers (the one that looks data sources up among them) with
    ``PYSPARK_PYTHON``, else the ``python3`` on ``PATH``: a job run as ``.venv/bin/python job.py``
    without the virtual environment on ``PATH`` would get another Python, without kafkalog
    (``[DATA_SOURCE_NOT_FOUND]``). So the workers get this process's Python, unless
    ``PYSPARK_PYTHON`` or ``spark.pyspark.python`` names one (the data source workers of Spark
    4.3 read only the environment: it gets the setting's value); with ``own_python`` (the
    ``kafkalog`` command, whose reads need the Python it runs in) always. ``env``: variables
    the JVM and its Python workers inherit, set in this process only while Spark starts."""
    conf = session_conf(extra_conf)
    if own_python:
        os.environ["PYSPARK_PYTHON"] = sys.executable
        conf.pop("spark.pyspark.python", None)
    else:
        # Spark 4.3's data source workers (lookup, creation) take the Python from the
        # environment only, not from spark.pyspark.python: give them the same one
        os.environ.setdefault("PYSPARK_PYTHON", conf.get("spark.pyspark.python", sys.executable))
    _python_path_for_workers()

    from pyspark.sql import SparkSession

    from .datasource import KafkaLogDataSource

    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in conf.items():
        builder = builder.config(key, value)
    before = {k: os.environ.get(k) for k in env or {}}
    os.environ.update(env or {})
    try:
        spark = builder.getOrCreate()
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    # Spark auto-discovers the source through the pyspark_kafkalog module when it is importable
    # (installed, or a checkout on PYTHONPATH). Registering it again would make Spark log a WARN
    # that it "replaced a statically registered data source", so register only when Spark does
    # not know the name (e.g. setuptools' default editable install hides the module).
    if not _source_known(spark, KafkaLogDataSource.name()):
        spark.dataSource.register(KafkaLogDataSource)
    return spark


def _source_known(spark: SparkSession, name: str) -> bool:
    """Whether the session already has a data source ``name`` (statically or at run time)."""
    try:
        manager = spark._jsparkSession.sessionState().dataSourceManager()  # type: ignore[attr-defined]
        return bool(manager.dataSourceExists(name))
    except Exception:  # Spark Connect, or a Spark without the method: register to be sure
        return False
