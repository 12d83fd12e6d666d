{% macro record_cdc_runs(results) %}
    {#- On-run-end hook: append one cdc_runs row per table whose state model was part of
        this run (built, failed or skipped; a table group's state: one per member run). Other commands (docs generate, compile, test)
        write nothing; an invocation's rows are written once, in a partition of their own. -#}
    {%- if not execute or flags.WHICH not in ('run', 'build', 'retry') -%}
        {{ return('') }}
    {%- endif -%}
    {%- set by_table = hashcdc._results_by_table(results) -%}
    {%- set rows = [] -%}
    {%- for table_name in by_table | sort -%}
        {%- set row = hashcdc._cdc_run_row(table_name, by_table[table_name]) -%}
        {%- if row -%}
            {%- do rows.append(row) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if rows -%}
        {%- set audit = hashcdc.cdc_runs_relation() -%}
        {%- do hashcdc._ensure_cdc_runs(audit) -%}
        {#- Each invocation writes a partition of its own, and a dynamic partition overwrite
            stages its files in a folder of its own (.spark-staging-<job>): runs appending
            side by side never share a staging folder (a plain insert shares the table's
            _temporary/0, which the first job to commit deletes under the others). -#}
        {%- do run_query(
            'insert overwrite table ' ~ audit ~ ' partition (invocation_id)\n'
            ~ rows | join('\nunion all\n')) -%}
    {%- endif -%}
    {{ return('') }}
{% endmacro %}


{% macro cdc_runs_relation() %}
    {#- The run audit table, in the target's schema. -#}
    {{ return(api.Relation.create(schema=target.schema, identifier=var('hashcdc_audit_table'), type='table')) }}
{% endmacro %}


{% macro _ensure_cdc_runs(audit) %}
    {#- Create the audit table, or bring one written by an earlier release (not partitioned
        by invocation) to the partitioned layout: copied beside it, then swapped in. -#}
    {%- do run_query(hashcdc._cdc_runs_ddl(audit)) -%}
    {%- set layout = run_query('describe table ' ~ audit) -%}
    {#- Columns added since (placed before the partition column, as the schema has it). -#}
    {%- set present = layout.columns[0].values() -%}
    {%- set missing = [] -%}
    {%- for name, data_type in hashcdc._cdc_runs_schema() if name not in present -%}
        {%- do missing.append(name ~ ' ' ~ data_type) -%}
    {%- endfor -%}
    {%- if missing -%}
        {%- do run_query('alter table ' ~ audit ~ ' add columns (' ~ missing | join(', ') ~ ')') -%}
    {%- endif -%}
    {%- if '# Partition Information' in layout.columns[0].values() -%}
        {{ return('') }}
    {%- endif -%}
    {%- set copy = audit.incorporate(path={'identifier': audit.identifier ~ '__hashcdc_rewrite'}) -%}
    {%- set retired = audit.incorporate(path={'identifier': audit.identifier ~ '__hashcdc_retired'}) -%}
    {%- do run_query('drop table if exists ' ~ copy) -%}
    {%- do run_query(hashcdc._cdc_runs_ddl(copy)) -%}
    {%- do run_query(
        'insert overwrite table ' ~ copy ~ ' partition (invocation_id) select '
        ~ hashcdc._cdc_runs_schema() | map(attribute=0) | join(', ') ~ ' from ' ~ audit) -%}
    {%- do run_query('alter table ' ~ audit ~ ' rename to ' ~ retired) -%}
    {%- do run_query('alter table ' ~ copy ~ ' rename to ' ~ audit) -%}
    {%- do run_query('drop table ' ~ retired) -%}
    {{ return('') }}
{% endmacro %}


{% macro _cdc_runs_schema() %}
    {#- The audit's columns and types, its partition column (invocation_id) last, as Spark
        lays out a partitioned table. -#}
    {{ return([
        ('table_name', 'string'),
        ('business_date', 'date'),
        ('command', 'string'),
        ('target_name', 'string'),
        ('status', 'string'),
        ('error_message', 'string'),
        ('started_at', 'timestamp'),
        ('ended_at', 'timestamp'),
        ('seconds', 'double'),
        ('model_seconds', 'map<string, double>'),
        ('rows_in', 'bigint'),
        ('rejects', 'bigint'),
        ('inserted', 'bigint'),
        ('updated', 'bigint'),
        ('deleted', 'bigint'),
        ('not_supplied', 'bigint'),
        ('unchanged', 'bigint'),
        ('state_rows_before', 'bigint'),
        ('state_rows_after', 'bigint'),
        ('watermark', 'string'),
        ('latest_event_at', 'timestamp'),
        ('earliest_event_at', 'timestamp'),
        ('retries', 'int'),
        ('invocation_id', 'string'),
    ]) }}
{% endmacro %}


{% macro _cdc_runs_ddl(audit) %}
    {%- set columns = [] -%}
    {%- for name, data_type in hashcdc._cdc_runs_schema() -%}
        {%- do columns.append(name ~ ' ' ~ data_type) -%}
    {%- endfor -%}
    {%- set ddl -%}
        create table if not exists {{ audit }} (
            {{ columns | join(',\n            ') }}
        ) using parquet
        partitioned by (invocation_id)
    {%- endset -%}
    {{ return(ddl) }}
{% endmacro %}


{% macro _node_table_name(node) %}
    {#- The hashcdc table a result's node belongs to (tests: the model they test). -#}
    {%- set own = node.config.meta.get('hashcdc_table_name') -%}
    {%- if own -%}
        {{ return(own) }}
    {%- endif -%}
    {%- for parent in node.depends_on.nodes -%}
        {%- set parent_node = graph.nodes.get(parent) -%}
        {%- if parent_node and parent_node.config.meta.get('hashcdc_table_name') -%}
            {{ return(parent_node.config.meta.get('hashcdc_table_name')) }}
        {%- endif -%}
    {%- endfor -%}
    {{ return(none) }}
{% endmacro %}


{% macro _results_by_table(results) %}
    {%- set by_table = {} -%}
    {%- for result in results -%}
        {%- set table_name = hashcdc._node_table_name(result.node) -%}
        {%- if table_name -%}
            {%- do by_table.setdefault(table_name, []).append(result) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(by_table) }}
{% endmacro %}


{% macro _sql_text(value) %}
    {#- A Spark SQL string literal of `value`, or null. -#}
    {%- if value is none -%}
        {{ return('cast(null as string)') }}
    {%- endif -%}
    {{ return("'" ~ (value | string | replace('\\', '\\\\') | replace("'", "\\'")) ~ "'") }}
{% endmacro %}


{% macro _cdc_run_status(table_results, state_result) %}
    {#- error: a model failed or a test failed or erred; skipped: the state was not built
        (an upstream table failed); warn: a test warned (rejected rows); else success. -#}
    {%- set statuses = table_results | map(attribute='status') | map('string') | list -%}
    {%- if 'error' in statuses or 'fail' in statuses or 'runtime error' in statuses -%}
        {{ return('error') }}
    {%- elif state_result.status | string == 'skipped' -%}
        {{ return('skipped') }}
    {%- elif 'warn' in statuses -%}
        {{ return('warn') }}
    {%- endif -%}
    {{ return('success') }}
{% endmacro %}


{% macro _cdc_run_timing(started_at, ended_at, model_seconds) %}
    {#- A cdc_runs row's timing columns: started_at, ended_at, seconds, model_seconds. -#}
    {%- set columns -%}
            timestamp'{{ started_at.strftime('%Y-%m-%d %H:%M:%S.%f') }} UTC' as started_at,
            timestamp'{{ ended_at.strftime('%Y-%m-%d %H:%M:%S.%f') }} UTC' as ended_at,
            cast({{ (ended_at - started_at).total_seconds() }} as double) as seconds,
            cast(map({{ model_seconds | join(', ') }}) as map<string, double>) as model_seconds
    {%- endset -%}
    {{ return(columns | trim) }}
{% endmacro %}


{% macro _cdc_run_uncounted() %}
    {#- The counts of a cdc_runs row whose state was not built (null), and its invocation. -#}
    {%- set columns -%}
            {% for column in ['rows_in', 'rejects', 'inserted', 'updated', 'deleted', 'not_supplied',
                'unchanged', 'state_rows_before', 'state_rows_after'] -%}
            cast(null as bigint) as {{ column }},
            {% endfor -%}
            cast(null as string) as watermark,
            cast(null as timestamp) as latest_event_at,
            cast(null as timestamp) as earliest_event_at,
            {{ hashcdc._cdc_run_retries() }},
            '{{ invocation_id }}' as invocation_id
    {%- endset -%}
    {{ return(columns | trim) }}
{% endmacro %}


{% macro _cdc_run_row(table_name, table_results) %}
    {#- The select of one cdc_runs row: timings and statuses from dbt's results, counts from
        the stage and the W row of the state's commit for the date (only when the state was
        built). A table group's (its stage embeds the members): one row per member run, its
        counts from its rows of the stage and its W row, in the same select. -#}
    {#- A group's members_applied test fails for its refused members only: their rows say so. -#}
    {%- set own_results = [] -%}
    {%- for result in table_results if not result.node.name.startswith('hashcdc_members_applied_') -%}
        {%- do own_results.append(result) -%}
    {%- endfor -%}
    {%- set table_results = own_results -%}
    {%- set found = {} -%}
    {%- for result in table_results -%}
        {%- if result.node.resource_type == 'model' -%}
            {%- do found.update({result.node.name: result}) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set state_result = found.get(table_name ~ '_state') -%}
    {%- set stage_result = found.get('stg_' ~ table_name) -%}
    {%- if state_result is none or stage_result is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set status = hashcdc._cdc_run_status(table_results, state_result) -%}
    {%- set messages = [] -%}
    {%- set starts, ends, model_seconds = [], [], [] -%}
    {%- for result in table_results -%}
        {%- if result.status | string in ('error', 'fail', 'runtime error') and result.message -%}
            {%- do messages.append(result.node.name ~ ': ' ~ result.message) -%}
        {%- endif -%}
        {%- for step in result.timing -%}
            {%- do starts.append(step.started_at) if step.started_at -%}
            {%- do ends.append(step.completed_at) if step.completed_at -%}
        {%- endfor -%}
        {%- if result.node.resource_type == 'model' -%}
            {%- do model_seconds.append(
                "'" ~ result.node.name ~ "', cast(" ~ (result.execution_time or 0) ~ " as double)"
            ) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set started_at = (starts | min) if starts else run_started_at -%}
    {%- set ended_at = (ends | max) if ends else started_at -%}
    {%- set table_config = stage_result.node.config.meta.get('hashcdc_table', {}) -%}
    {#- A group's members share their extract type. -#}
    {%- set is_feed = ((table_config.get('members') or [table_config])[0]).get('extract_type') == 'changes' -%}
    {%- set members = [] -%}
    {%- for member in table_config.get('members', []) if member.get('enabled', true) -%}
        {%- do members.append(member.name) -%}
    {%- endfor -%}
    {%- set business_date = hashcdc.business_date() -%}
    {%- set counted = state_result.status | string == 'success' -%}
    {#- A group's members the date applied; those its stage refused get a failed row each. -#}
    {%- set refused = hashcdc.refused_members(table_name) if members and counted else {} -%}
    {%- set members = hashcdc.members_run(table_name, members) if members else members -%}
    {%- set applied = hashcdc.applied_state_version(
        api.Relation.create(
            schema=state_result.node.schema, identifier=state_result.node.alias,
            type='table'),
        business_date) if counted else none -%}
    {%- set row -%}
        select
            {{ 'table_name' if members else "'" ~ table_name ~ "'" }} as table_name,
            date'{{ business_date }}' as business_date,
            '{{ flags.WHICH }}' as command,
            '{{ target.name }}' as target_name,
            {%- if members and counted and status == 'warn' %}
            {#- A group's warning is its rejects test's: a member without rejects did not warn. #}
            if(incoming.rejects > 0, 'warn', 'success') as status,
            {%- else %}
            '{{ status }}' as status,
            {%- endif %}
            {{ hashcdc._sql_text(messages | join('\n') if messages else none) }} as error_message,
            {{ hashcdc._cdc_run_timing(started_at, ended_at, model_seconds) }},
        {%- if counted %}
            incoming.rows_in,
            incoming.rejects,
            snapshot.inserted,
            snapshot.updated,
            snapshot.deleted,
            snapshot.not_supplied,
            snapshot.unchanged,
            snapshot.state_rows_before,
            snapshot.state_rows_after,
            {{ 'to_json(snapshot.watermark)' if is_feed else 'cast(null as string)' }} as watermark,
            incoming.latest_event_at,
            incoming.earliest_event_at,
            {{ hashcdc._cdc_run_retries() }},
            '{{ invocation_id }}' as invocation_id
        from (
            {%- set stage = api.Relation.create(
                schema=stage_result.node.schema, identifier=stage_result.node.alias) %}
            {%- set stage_counts = hashcdc.stage_counts(stage, business_date) %}
            {%- if members %}
            select
                table_name,
                count(*) as rows_in,
                count_if(_row_errors is not null) as rejects,
                {{ hashcdc._event_at(is_feed, 'max') }} as latest_event_at,
                {{ hashcdc._event_at(is_feed, 'min') }} as earliest_event_at
            from {{ hashcdc.stage_relation(stage, business_date) }}
            where table_name in ('{{ members | join("', '") }}')
            group by table_name
            {%- elif stage_counts is not none %}
            {#- As the stage's checks counted it (no second scan of the stage). #}
            select
                {{ stage_counts.rows }}L as rows_in,
                {{ stage_counts.rejected }}L as rejects,
                {{ hashcdc._timestamp(stage_counts.latest_event_at) }} as latest_event_at,
                {{ hashcdc._timestamp(stage_counts.earliest_event_at) }} as earliest_event_at
            {%- else %}
            select
                count(*) as rows_in,
                count_if(_row_errors is not null) as rejects,
                {{ hashcdc._event_at(is_feed, 'max') }} as latest_event_at,
                {{ hashcdc._event_at(is_feed, 'min') }} as earliest_event_at
            from {{ hashcdc.stage_relation(stage, business_date) }}
            {%- endif %}
        ) as incoming
        {{ 'join' if members else 'cross join' }} (
            {#- The counts the date's diff recorded in the W row of the state's commit. #}
            select
                {{ 'table_name,' if members }}
                operation_counts['I'] as inserted,
                operation_counts['U'] as updated,
                operation_counts['D'] as deleted,
                operation_counts['X'] as not_supplied,
                operation_counts['N'] as unchanged,
                operation_counts['state_rows_before'] as state_rows_before,
                operation_counts['state_rows_before'] + operation_counts['I']
                    - operation_counts['D'] as state_rows_after,
                {{ 'event_sequence' if is_feed else 'null' }} as watermark
            from {{ state_result.node.relation_name }}
            {%- if applied is not none %} version as of {{ applied.version }}{% endif %}
            where operation = 'W' {{- ' and false' if applied is none }}
        ) as snapshot
        {%- if members %}
            using (table_name)
        {%- endif %}
        {%- else %}
            {{ hashcdc._cdc_run_uncounted() }}
        {%- if members %}
        from (values ('{{ members | join("'), ('") }}')) as members (table_name)
        {%- endif %}
        {%- endif %}
        {%- for name, reason in refused.items() %}
        union all
        select
            '{{ name }}' as table_name,
            date'{{ business_date }}' as business_date,
            '{{ flags.WHICH }}' as command,
            '{{ target.name }}' as target_name,
            'error' as status,
            {{ hashcdc._sql_text(reason) }} as error_message,
            {{ hashcdc._cdc_run_timing(started_at, ended_at, model_seconds) }},
            {{ hashcdc._cdc_run_uncounted() }}
        {%- endfor %}
    {%- endset -%}
    {{ return(row) }}
{% endmacro %}


{% macro _cdc_run_retries() %}
    {#- The transient failures `hashcdc stream` retried before this run (its var). -#}
    {{ return('cast(' ~ (var('hashcdc_retries', 0) | int) ~ ' as int) as retries') }}
{% endmacro %}


{% macro _event_at(is_feed, aggregate) %}
    {#- The source commit time of the latest (`max`) or earliest (`min`) event a feed's
        date applied (the stream's lag, and its worst in the batch). -#}
    {{ return(aggregate ~ '(if(_row_errors is null and is_new_event, event_time, null))'
        if is_feed else 'cast(null as timestamp)') }}
{% endmacro %}


{% macro _timestamp(text) %}
    {#- A timestamp literal of a stage count's text, or a typed null. -#}
    {{ return("timestamp'" ~ text ~ "'" if text else 'cast(null as timestamp)') }}
{% endmacro %}
