"""Spark auto-discovery entry point for the ``kafkalog`` data source.

PySpark (>= 4.0) imports every top-level module named ``pyspark_*`` and registers its
``DefaultSource`` in new sessions, so after ``pip install kafkalog`` this works with no
``spark.dataSource.register`` call::

    spark.read.format("kafkalog").load("/var/lib/kafka/data/orders-0")
"""

from kafkalog_source.spark.datasource import KafkaLogDataSource as DefaultSource

__all__ = ["DefaultSource"]
