"""The peer of ``hashcdc bench --stream``: the streaming MERGE a Spark user writes.

Structured Streaming over a landing folder of Debezium JSON lines (``text`` source), or
over a Kafka topic of them (Spark's Kafka source, when ``HASHCDC_BENCH_KAFKA`` names the
broker), with a 0.5 s trigger; each micro-batch keeps the latest event per key (by
``source.lsn``) and MERGEs it into a Delta table. Each batch's end (ms) and its newest
event's ``ts_ms`` are appended to a file as a JSON pair. Run as ``python -m
hashcdc.bench.stream_peer WORK FOLDER|TOPIC OUT`` with the scratch project's environment;
it runs until terminated.
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

from hashcdc.bench.stream import PEER_SERVERS
from hashcdc.runtime.project import spark_session

EVENT_SCHEMA = (
    "after struct<id bigint, name string, amount bigint>, op string, ts_ms bigint, "
    "source struct<lsn bigint>"
)


def main(work: Path, source: str, out: Path) -> None:
    """Stream ``source`` (a folder, or a topic) into ``work/peer_current`` until terminated."""
    spark = spark_session(work)
    target = str(work / "peer_current")
    spark.sql(
        f"create table if not exists delta.`{target}` "
        "(id bigint, name string, amount bigint, lsn bigint) using delta"
    )
    batches = out.open("a", encoding="utf-8")

    def merge(batch: DataFrame, batch_id: Any) -> None:
        events = batch.select(F.from_json("value", EVENT_SCHEMA).alias("e")).select("e.*")
        newest_first = Window.partitionBy("after.id").orderBy(F.desc("source.lsn"))
        latest = events.withColumn("r", F.row_number().over(newest_first)).where("r = 1")
        newest = latest.agg(F.max("ts_ms")).first()[0]
        source = latest.select("after.*", F.col("source.lsn").alias("lsn"))
        source.createOrReplaceTempView("peer_batch")
        batch.sparkSession.sql(
            f"merge into delta.`{target}` as t using peer_batch as s on t.id = s.id "
            "when matched then update set * when not matched then insert *"
        )
        batches.write(json.dumps([int(time.time() * 1000), newest]) + "\n")
        batches.flush()

    servers = os.environ.get(PEER_SERVERS)
    if servers:
        lines = (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", servers)
            .option("subscribe", source)
            .option("startingOffsets", "earliest")
            .load()
            .where("value is not null")
            .selectExpr("cast(value as string) as value")
        )
    else:
        lines = spark.readStream.format("text").load(source)
    query = (
        lines.writeStream.foreachBatch(merge)
        .option("checkpointLocation", str(work / "peer_checkpoint"))
        .trigger(processingTime="0.5 seconds")
        .start()
    )
    query.awaitTermination()


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]))
