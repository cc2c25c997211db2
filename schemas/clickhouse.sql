-- ringprof's tables in ClickHouse, schema version 1.
--
-- `ringprof ship` creates what is missing (every statement is IF NOT EXISTS),
-- putting its database for {db} and its table prefix for {prefix}; a user may
-- run the same statements by hand. Plain types only, so that the schema loads
-- on Debian 12's ClickHouse 18.16 and on current releases alike: times are
-- nanoseconds since the Unix epoch in UInt64, `date` (the day of the row's
-- time, UTC) partitions, and a span's arguments are parallel key and value
-- arrays. Every row of a shipped file carries the file's key (`file_key`),
-- which the ledger ({prefix}files) records as begun and done: shipping a file
-- again inserts nothing, and a file whose shipping stopped part-way has its
-- rows deleted by key before it is shipped again.
-- Statements are separated by a line holding only ";".

CREATE TABLE IF NOT EXISTS {db}.{prefix}schema_version (version UInt32, created DateTime) ENGINE = TinyLog
;
CREATE TABLE IF NOT EXISTS {db}.{prefix}files (
  file_key String, host String, job String, rank Int32, pid UInt32, process_start_ns UInt64,
  path String, size UInt64, events UInt64, state String, at DateTime
) ENGINE = MergeTree() ORDER BY (file_key, at)
;
-- One row per process and per file shipped (the latest a merge keeps).
CREATE TABLE IF NOT EXISTS {db}.{prefix}processes (
  host String, job String, rank Int32, world_size Int32, pid UInt32, process_start_ns UInt64,
  command_line Array(String), ringprof_version String, shipped DateTime
) ENGINE = ReplacingMergeTree(shipped) ORDER BY (host, pid, process_start_ns)
;
CREATE TABLE IF NOT EXISTS {db}.{prefix}threads (
  host String, pid UInt32, process_start_ns UInt64, thread_index UInt32, tid UInt32, name String, shipped DateTime
) ENGINE = ReplacingMergeTree(shipped) ORDER BY (host, pid, process_start_ns, thread_index)
;
-- Zones (async = 0) and async spans (async = 1: begun and ended on any
-- threads; `thread_index` is the begin's). depth 0: no enclosing zone;
-- `parent` is the enclosing zone's name ("" at depth 0 and for async spans).
-- unterminated = 1: no end was recorded, the span runs to the process's last
-- event.
CREATE TABLE IF NOT EXISTS {db}.{prefix}spans (
  date Date, host String, job String, rank Int32, pid UInt32, process_start_ns UInt64,
  thread_index UInt32, tid UInt32, thread String,
  name String, begin_ns UInt64, end_ns UInt64, dur_ns UInt64, self_ns UInt64,
  depth UInt32, parent String, async UInt8, async_id UInt64, unterminated UInt8,
  arg_keys Array(String), arg_values Array(String), file_key String
) ENGINE = MergeTree() PARTITION BY toYYYYMM(date) ORDER BY (host, name, begin_ns)
;
-- CPU samples; each stack once in {prefix}stacks, named by a hash of its
-- resolved frames, so equal stacks of different processes and hosts share it.
CREATE TABLE IF NOT EXISTS {db}.{prefix}samples (
  date Date, host String, job String, rank Int32, pid UInt32, process_start_ns UInt64,
  thread_index UInt32, tid UInt32, thread String, time_ns UInt64, stack_key UInt64, leaf String, file_key String
) ENGINE = MergeTree() PARTITION BY toYYYYMM(date) ORDER BY (host, time_ns)
;
CREATE TABLE IF NOT EXISTS {db}.{prefix}stacks (stack_key UInt64, frames Array(String))
ENGINE = ReplacingMergeTree() ORDER BY stack_key
;
CREATE TABLE IF NOT EXISTS {db}.{prefix}gpu (
  date Date, host String, job String, rank Int32, pid UInt32, process_start_ns UInt64,
  kind String, name String, device UInt32, stream UInt32, correlation UInt32,
  start_ns UInt64, dur_ns UInt64, bytes UInt64, file_key String
) ENGINE = MergeTree() PARTITION BY toYYYYMM(date) ORDER BY (host, kind, name, start_ns)
;
CREATE TABLE IF NOT EXISTS {db}.{prefix}counters (
  date Date, host String, job String, rank Int32, pid UInt32, process_start_ns UInt64,
  thread_index UInt32, name String, time_ns UInt64, value Float64, file_key String
) ENGINE = MergeTree() PARTITION BY toYYYYMM(date) ORDER BY (host, name, time_ns)
;
-- Step marks, operational marks and instants: kind 'step' (value: the step
-- number), 'mark' (window starts and ends, triggers; value: theirs), 'instant'.
CREATE TABLE IF NOT EXISTS {db}.{prefix}marks (
  date Date, host String, job String, rank Int32, pid UInt32, process_start_ns UInt64,
  thread_index UInt32, kind String, name String, value UInt64, time_ns UInt64, file_key String
) ENGINE = MergeTree() PARTITION BY toYYYYMM(date) ORDER BY (host, kind, time_ns)
;
-- Rollup: per rank and step, the step's time (from its mark to the next).
CREATE TABLE IF NOT EXISTS {db}.{prefix}steps (
  date Date, host String, job String, rank Int32, pid UInt32, process_start_ns UInt64,
  step UInt64, begin_ns UInt64, dur_ns UInt64, file_key String
) ENGINE = MergeTree() PARTITION BY toYYYYMM(date) ORDER BY (job, rank, begin_ns)
;
-- Rollup: per zone and hour (UTC) on each host and job, calls, total and self
-- time and duration quantiles, kept up by a materialized view on spans. Read
-- it with countMerge(calls), sumMerge(total_ns), quantilesMerge(0.5, 0.9, 0.99)(quantiles).
CREATE TABLE IF NOT EXISTS {db}.{prefix}zone_hourly (
  hour DateTime, host String, job String, name String, file_key String,
  calls AggregateFunction(count), total_ns AggregateFunction(sum, UInt64), self_ns AggregateFunction(sum, UInt64),
  quantiles AggregateFunction(quantiles(0.5, 0.9, 0.99), UInt64)
) ENGINE = AggregatingMergeTree() PARTITION BY toYYYYMM(hour) ORDER BY (host, job, name, hour, file_key)
;
CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.{prefix}zone_hourly_mv TO {db}.{prefix}zone_hourly AS
SELECT toStartOfHour(toDateTime(intDiv(begin_ns, 1000000000))) AS hour, host, job, name, file_key,
       countState() AS calls, sumState(dur_ns) AS total_ns, sumState(self_ns) AS self_ns,
       quantilesState(0.5, 0.9, 0.99)(dur_ns) AS quantiles
FROM {db}.{prefix}spans GROUP BY hour, host, job, name, file_key
;
-- Over a cluster's shards (`ship --cluster NAME`, the cluster as the servers'
-- remote_servers name it): every host ships into the local tables of the
-- server it talks to, and these tables, the same on every shard, read all of
-- them. Created only when a cluster is named.
CREATE TABLE IF NOT EXISTS {db}.{prefix}spans_all AS {db}.{prefix}spans
ENGINE = Distributed({cluster}, {db}, {prefix}spans, rand())
;
CREATE TABLE IF NOT EXISTS {db}.{prefix}samples_all AS {db}.{prefix}samples
ENGINE = Distributed({cluster}, {db}, {prefix}samples, rand())
;
CREATE TABLE IF NOT EXISTS {db}.{prefix}stacks_all AS {db}.{prefix}stacks
ENGINE = Distributed({cluster}, {db}, {prefix}stacks, rand())
;
CREATE TABLE IF NOT EXISTS {db}.{prefix}gpu_all AS {db}.{prefix}gpu
ENGINE = Distributed({cluster}, {db}, {prefix}gpu, rand())
;
CREATE TABLE IF NOT EXISTS {db}.{prefix}counters_all AS {db}.{prefix}counters
ENGINE = Distributed({cluster}, {db}, {prefix}counters, rand())
;
CREATE TABLE IF NOT EXISTS {db}.{prefix}marks_all AS {db}.{prefix}marks
ENGINE = Distributed({cluster}, {db}, {prefix}marks, rand())
;
CREATE TABLE IF NOT EXISTS {db}.{prefix}steps_all AS {db}.{prefix}steps
ENGINE = Distributed({cluster}, {db}, {prefix}steps, rand())
;
CREATE TABLE IF NOT EXISTS {db}.{prefix}processes_all AS {db}.{prefix}processes
ENGINE = Distributed({cluster}, {db}, {prefix}processes, rand())
;
CREATE TABLE IF NOT EXISTS {db}.{prefix}threads_all AS {db}.{prefix}threads
ENGINE = Distributed({cluster}, {db}, {prefix}threads, rand())
;
CREATE TABLE IF NOT EXISTS {db}.{prefix}zone_hourly_all AS {db}.{prefix}zone_hourly
ENGINE = Distributed({cluster}, {db}, {prefix}zone_hourly, rand())
