"""The peer of ``hashcdc bench --stream``: the streaming MERGE a Spark user writes.

Structured Streaming over landing folders of Debezium JSON lines (``text`` source, a
glob over one folder a table), or over Kafka topics of them (Spark's Kafka source, when
``HASHCDC_BENCH_KAFKA`` names the broker: the topics a pattern names, one a table, the
table the topic's name after its prefix), with a 0.5 s trigger; each micro-batch keeps
the latest event per table and key (by ``source.lsn``) and MERGEs each table it touched
into that table's Delta table, one after another. For each table a batch touched, its
name, the batch's end (ms) and the table's newest event's ``ts_ms`` are appended to a
file as a JSON triple. Run as ``python -m hashcdc.bench.stream_peer WORK GLOB|TOPIC OUT``
with the scratch project's environment (a topic pattern for Kafka); it runs until terminated.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812 - the conventional alias

from hashcdc.bench.stream import PEER_SERVERS, PEER_TOPIC_PREFIX
from hashcdc.runtime.project import spark_session

EVENT_SCHEMA = (
    "after struct<id bigint, name string, amount bigint>, op string, ts_ms bigint, "
    "source struct<lsn bigint>"
)


def main(work: Path, source: str, out: Path) -> None:
    """Stream ``source`` (a glob of folders, or a topic) into ``work/peer/<table>``."""
    spark = spark_session(work)
    batches = out.open("a", encoding="utf-8")

    def merge(batch: DataFrame, batch_id: Any) -> None:
        events = batch.select("table", F.from_json("value", EVENT_SCHEMA).alias("e")).select(
            "table", "e.*"
        )
        newest_first = Window.partitionBy("table", "after.id").orderBy(F.desc("source.lsn"))
        latest = events.withColumn("r", F.row_number().over(newest_first)).where("r = 1")
        latest = latest.select("table", "after.*", F.col("source.lsn").alias("lsn"), "ts_ms")
        latest.cache()
        touched = latest.groupBy("table").agg(F.max("ts_ms").alias("newest")).collect()
        for row in touched:
            target = str(work / "peer" / row["table"])
            batch.sparkSession.sql(
                f"create table if not exists delta.`{target}` "
                "(id bigint, name string, amount bigint, lsn bigint) using delta"
            )
            latest.where(F.col("table") == row["table"]).drop(
                "table", "ts_ms"
            ).createOrReplaceTempView("peer_batch")
            batch.sparkSession.sql(
                f"merge into delta.`{target}` as t using peer_batch as s on t.id = s.id "
                "when matched then update set * when not matched then insert *"
            )
            # Visible once its MERGE commits (the tables after it wait their turn).
            ended = int(time.time() * 1000)
            batches.write(json.dumps([row["table"], ended, row["newest"]]) + "\n")
        batches.flush()
        latest.unpersist()

    servers = os.environ.get(PEER_SERVERS)
    if servers:
        lines = (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", servers)
            .option("subscribePattern", source)
            .option("startingOffsets", "earliest")
            .load()
            .where("value is not null")
            .select(
                F.substring(F.col("topic"), len(PEER_TOPIC_PREFIX) + 1, 1000).alias("table"),
                F.col("value").cast("string").alias("value"),
            )
        )
    else:
        lines = (
            spark.readStream.format("text")
            .load(source)
            .select(
                F.regexp_extract(F.input_file_name(), r"/([^/]+)/[^/]+$", 1).alias("table"),
                "value",
            )
        )
    query = (
        lines.writeStream.foreachBatch(merge)
        .option("checkpointLocation", str(work / "peer_checkpoint"))
        .trigger(processingTime="0.5 seconds")
        .start()
    )
    query.awaitTermination()


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]))
