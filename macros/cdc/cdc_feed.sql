{% macro cdc_feed_state(incoming, table_name, columns, keyless=false, hash_column='nonkeyhash', shape_changes={}, members=none, member_shapes={}) %}
{#- The rows a date's change events write to the state (merged by hashcdc.merge_state):
    the events not applied before (the stage's is_new_event), in sequence order, net per
    key, compared with the previous state; the keys they touch (I, U, D, and N: supplied
    again), not the others. The W row carries the table's watermark (the greatest
    sequence applied so far) and the date's counts; one 'A' row per event applied at the
    watermark's position its event_id (as nonkeyhash), so that the rest of a snapshot
    landed later is still applied ('a' removes an A row the watermark has left). A topic's
    events (source.kafka) also keep a watermark per Kafka partition: a P row each.
    members: a table group's state (`table_name` the group), as cdc_state's: each member
    its own keys, truncates, watermarks, A and P rows and W row; a member not run is not
    read. -#}
{%- set business_date = hashcdc.business_date() -%}
{%- set members = hashcdc._run_members(table_name, members) -%}
{%- set previous = hashcdc.checked_previous_state(business_date, table_name) -%}
{%- set previous_date = previous.business_date if previous else none -%}
{%- set shape_changes = hashcdc._with_recorded_additions(shape_changes, table_name, previous_date) -%}
{%- set member_changes = adapter.hashcdc_member_shape_changes(this, members | list, member_shapes)
    if members is not none and previous_date is not none and execute else {} -%}
{%- set state_columns = columns + (['copies'] if keyless else []) -%}
{%- set partitioned = hashcdc.reads_partitions(incoming) -%}
{%- set member = 'table_name' if members is not none else none -%}
{%- set by_member = member ~ ', ' if member else '' -%}
with

{{ hashcdc.feed_applied_events(
    incoming, this if previous else none, previous, columns, hash_column, members) }},
{%- if partitioned %}

previous_partitions as (
    {#- The watermarks of the Kafka partitions (P rows). #}
    {{- hashcdc._previous_state_rows(
        this if previous else none, previous, 'previous_applied',
        ([member] if member else []) + ['keyhash', 'event_sequence'], operations=['P'],
        members=members) }}
),
{%- endif %}

previous_state as (
    {{- hashcdc._previous_state_rows(
        this if previous else none, previous, 'applied_events',
        ([member] if member else []) + columns + ['keyhash', 'nonkeyhash', 'event_sequence'],
        typed_extras=dict(
            ({'copies': 'bigint'} if keyless else {}), eff_start_date='date', seen_date='date'),
        members=members) }}
),

{{ hashcdc.feed_net_key_events(columns, keyless, member) }},

compared as (
    select
        {%- if member %}
        coalesce(net_key_events.{{ member }}, previous_state.{{ member }}) as {{ member }},
        {%- endif %}
        net_key_events.keyhash as event_keyhash,
        net_key_events.is_upsert,
        net_key_events.nonkeyhash as event_nonkeyhash,
        net_key_events.event_row,
        net_key_events.event_sequence,
        previous_state.keyhash as previous_keyhash,
        previous_state.nonkeyhash as previous_nonkeyhash,
        previous_state.eff_start_date as previous_eff_start_date,
        previous_state.event_sequence as previous_event_sequence,
        previous_state.seen_date as previous_seen_date,
        struct(
            {{ hashcdc._column_list(columns, 'previous_state', indent=12) }}
        ) as previous_row,
        {%- if keyless %}
        coalesce(previous_state.copies, 0) as previous_copies,
        greatest(
            0,
            if(last_truncate.truncated_at is null, coalesce(previous_state.copies, 0), 0)
            + coalesce(net_key_events.copies_delta, 0)
        ) as new_copies,
        {%- endif %}
        last_truncate.truncated_at
    from net_key_events
    full outer join previous_state
        on net_key_events.keyhash = previous_state.keyhash
        {{- hashcdc._same_member(member, 'net_key_events', 'previous_state') }}
    {{ hashcdc._join_truncate(
        member and 'coalesce(net_key_events.' ~ member ~ ', previous_state.' ~ member ~ ')') }}
),

reshaped as (
    {#- is_reshaped: the hashes differ only because the table's shape changed. #}
    select
        compared.*,
        {%- if keyless %}
        false as is_reshaped
        {%- else %}
        is_upsert
        and event_nonkeyhash != previous_nonkeyhash
        and {{ hashcdc._only_shape_differs_of(
            'event_row', member, member_changes, shape_changes, business_date) }}
            as is_reshaped
        {%- endif %}
    from compared
),

operations_tagged as (
    select
        case
            {%- if keyless %}
            when previous_copies = 0 and new_copies = 0 then null
            when previous_copies = 0 then 'I'
            when new_copies = 0 then 'D'
            when new_copies != previous_copies then 'U'
            when event_keyhash is not null then 'N'
            else 'X'
            {%- else %}
            when event_keyhash is null and truncated_at is not null then 'D'
            when event_keyhash is null then 'X'
            when not is_upsert and previous_keyhash is null then null
            when not is_upsert then 'D'
            when previous_keyhash is null then 'I'
            when event_nonkeyhash != previous_nonkeyhash and not is_reshaped then 'U'
            else 'N'
            {%- endif %}
        end as operation,
        coalesce(event_keyhash, previous_keyhash) as keyhash,
        reshaped.*
    from reshaped
),

new_state as (
    select
        {{ by_member }}if(
            (operation in ('I', 'U') or is_reshaped) and event_row is not null,
            event_row,
            previous_row
        ) as state_row,
        {%- if keyless %}
        if(operation = 'D', previous_copies, new_copies) as copies,
        {%- endif %}
        keyhash,
        if(
            operation in ('I', 'U') or is_reshaped,
            coalesce(event_nonkeyhash, previous_nonkeyhash),
            previous_nonkeyhash
        ) as nonkeyhash,
        operation,
        if(
            operation in ('I', 'U', 'D'), date'{{ business_date }}', previous_eff_start_date
        ) as eff_start_date,
        case
            when operation = 'X' then previous_event_sequence
            else coalesce(event_sequence, truncated_at)
        end as event_sequence,
        if(operation = 'X', previous_seen_date, date'{{ business_date }}') as seen_date
    from operations_tagged
    where operation is not null and operation != 'X'
),

counted_operations as (
    select * from operations_tagged where operation is not null
),

operation_counts as (
    {{ hashcdc._operation_counts('counted_operations', 'previous_nonkeyhash', members=members) }}
),

{{ hashcdc.feed_watermark_bookkeeping(partitioned, member) }},

final as (
    select
        {{ by_member }}{{ hashcdc._column_list(columns, 'state_row') }},
        {{- "\n        copies," if keyless }}
        keyhash,
        nonkeyhash,
        operation,
        eff_start_date,
        event_sequence,
        seen_date,
        date'{{ business_date }}' as business_date,
        cast(null as map<string, bigint>) as operation_counts
    from new_state
    union all
    select
        {{ by_member }}{{ hashcdc._null_columns(state_columns) }},
        keyhash,
        event_id as nonkeyhash,
        operation,
        null as eff_start_date,
        event_sequence,
        null as seen_date,
        date'{{ business_date }}' as business_date,
        operation_counts
    from bookkeeping
)

select * from final
{% endmacro %}


{% macro feed_net_key_events(columns, keyless=false, member=none) %}
{#- CTEs last_truncate, key_events, key_events_after_truncate, (with a key)
    ranked_key_events and net_key_events: the applied events (CTE applied_events) as the
    net change of each key, after the date's latest truncate. member: the column naming a
    group's member (each its own keys and truncates). -#}
{%- set by_member = member ~ ', ' if member else '' -%}
last_truncate as (
    {#- Everything before the latest truncate of the date is void. -#}
    select {{ by_member }}max(event_sequence) as truncated_at
    from applied_events
    where event_op = 't'
    {%- if member %}
    group by {{ member }}
    {%- endif %}
),

key_events as (
    {#- Each event as a change of one key; an update that moves a row to another key
        (or, without a key, any update) is also a removal of its before key. -#}
    select
        {{ by_member }}keyhash,
        event_sequence,
        {#- At one position, a snapshot's read comes before a streamed change. #}
        if(event_op = 'r', 0, 1) as read_phase,
        event_op in ('c', 'u', 'r') as is_upsert,
        {{ "if(event_op = 'd', -1, 1) as copies_delta," if keyless }}
        nonkeyhash,
        struct(
            {{ hashcdc._column_list(columns, indent=12) }}
        ) as event_row
    from applied_events
    where event_op != 't'
    union all
    select
        {{ by_member }}before_keyhash as keyhash,
        event_sequence,
        1 as read_phase,
        false as is_upsert,
        {{ "-1 as copies_delta," if keyless }}
        null as nonkeyhash,
        null as event_row
    from applied_events
    where before_keyhash is not null
),

key_events_after_truncate as (
    select key_events.*
    from key_events
    {{ hashcdc._join_truncate(member and 'key_events.' ~ member) }}
    where
        last_truncate.truncated_at is null
        or key_events.event_sequence > last_truncate.truncated_at
),

{%- if not keyless %}
ranked_key_events as (
    select
        key_events_after_truncate.*,
        row_number() over (
            partition by {{ by_member }}keyhash
            order by event_sequence desc, read_phase desc, is_upsert desc
        ) as recency
    from key_events_after_truncate
),

{% endif -%}
net_key_events as (
    {%- if keyless %}
    {#- Without a key, identical rows are counted: the net effect is the sum of the
        copies the events add and remove. -#}
    select
        {{ by_member }}keyhash,
        sum(copies_delta) as copies_delta,
        true as is_upsert,
        max_by(nonkeyhash, if(event_row is null, null, event_sequence)) as nonkeyhash,
        max_by(event_row, if(event_row is null, null, event_sequence)) as event_row,
        max(event_sequence) as event_sequence
    from key_events_after_truncate
    group by {{ by_member }}keyhash
    {%- else %}
    {#- With a key, the latest event of each key wins. -#}
    select
        {{ by_member }}keyhash,
        is_upsert,
        nonkeyhash,
        event_row,
        event_sequence
    from ranked_key_events
    where recency = 1
    {%- endif %}
)
{%- endmacro %}


{% macro feed_watermark_bookkeeping(partitioned=false, member=none) %}
{#- CTEs watermark, applied_at_watermark, left_behind and bookkeeping: the W row (the
    watermark and the date's counts, from CTE operation_counts), an A row per event applied
    at its watermark's position, an 'a' row per earlier A row the watermarks have left
    (from CTEs applied_events, delivered_events, previous_watermark and previous_applied).
    `partitioned` (a topic's events): also CTEs partition_positions and
    partition_watermarks, a P row per Kafka partition (from CTEs previous_partitions and
    last_truncate). member: the column naming a group's member: each member its own W, A
    and P rows (one W row per row of CTE operation_counts). -#}
{%- set by_member = member ~ ', ' if member else '' -%}
watermark as (
    {%- if member %}
    select
        operation_counts.{{ member }},
        greatest(previous.event_sequence, applied.event_sequence) as event_sequence
    from operation_counts
    left join (
        select {{ member }}, max(event_sequence) as event_sequence
        from previous_watermark
        group by {{ member }}
    ) as previous
        on operation_counts.{{ member }} = previous.{{ member }}
    left join (
        select {{ member }}, max(event_sequence) as event_sequence
        from applied_events
        group by {{ member }}
    ) as applied
        on operation_counts.{{ member }} = applied.{{ member }}
    {%- else %}
    select
        greatest(
            (select max(event_sequence) from previous_watermark),
            (select max(event_sequence) from applied_events)
        ) as event_sequence
    {%- endif %}
),
{%- if partitioned %}

partition_positions as (
    {#- Per partition (keyhash: its number as text) the sequences applied; keyhash null:
        the floor of partitions with no row of their own, first the table's watermark
        when partitions get watermarks (what a state without them had applied). -#}
    select
        {{ by_member }}keyhash,
        event_sequence
    from previous_partitions
    union all
    select
        {{ by_member }}partition_keyhash as keyhash,
        event_sequence
    from delivered_events
    where partition_keyhash is not null
    union all
    {%- if member %}
    select
        watermark.{{ member }},
        cast(null as binary) as keyhash,
        previous.event_sequence
    from watermark
    left join previous_watermark as previous
        on watermark.{{ member }} = previous.{{ member }}
    left anti join previous_partitions
        on watermark.{{ member }} = previous_partitions.{{ member }}
    {%- else %}
    select
        cast(null as binary) as keyhash,
        (select max(event_sequence) from previous_watermark) as event_sequence
    from (select count(*) as tracked from previous_partitions) as tracking
    where tracking.tracked = 0
    {%- endif %}
),

partition_watermarks as (
    {#- Raised to the date's truncate: a partition read behind the others may still hold
        events from before it, which the truncate has voided. -#}
    select
        {{ 'partition_positions.' ~ by_member if member }}partition_positions.keyhash,
        greatest(
            max(partition_positions.event_sequence), max(last_truncate.truncated_at)
        ) as event_sequence
    from partition_positions
    {{ hashcdc._join_truncate(member and 'partition_positions.' ~ member) }}
    group by {{ 'partition_positions.' ~ by_member if member }}partition_positions.keyhash
),
{%- endif %}

applied_at_watermark as (
    {#- Today's events at their watermark's position (the earlier dates' A rows stay while
        the watermark has not moved). -#}
    select distinct
        {{ 'delivered_events.' ~ by_member if member }}delivered_events.keyhash,
        delivered_events.event_id,
        delivered_events.event_sequence
    from delivered_events
    {%- if partitioned %}
    left join partition_watermarks
        on delivered_events.partition_keyhash = partition_watermarks.keyhash
        {{- hashcdc._same_member(member, 'delivered_events', 'partition_watermarks') }}
    {%- endif %}
    {%- if member %}
    inner join watermark
        on delivered_events.{{ member }} = watermark.{{ member }}
    {%- else %}
    cross join watermark
    {%- endif %}
    where
        delivered_events.event_sequence = {{
            'coalesce(partition_watermarks.event_sequence, watermark.event_sequence)'
            if partitioned else 'watermark.event_sequence' }}
),

left_behind as (
    {#- The earlier A rows the watermarks have moved past. -#}
    select
        {{ 'previous_applied.' ~ by_member if member }}previous_applied.keyhash,
        previous_applied.nonkeyhash as event_id
    from previous_applied
    left anti join (
        select {{ by_member }}event_sequence from watermark
        {%- if partitioned %}
        union all
        select {{ by_member }}event_sequence from partition_watermarks
        {%- endif %}
    ) as watermarks
        on previous_applied.event_sequence = watermarks.event_sequence
        {{- hashcdc._same_member(member, 'previous_applied', 'watermarks') }}
),

bookkeeping as (
    select
        {{ 'watermark.' ~ by_member if member }}null as keyhash,
        null as event_id,
        'W' as operation,
        watermark.event_sequence,
        operation_counts.counts as operation_counts
    from watermark
    {%- if member %}
    inner join operation_counts
        on watermark.{{ member }} = operation_counts.{{ member }}
    {%- else %}
    cross join operation_counts
    {%- endif %}
    union all
    select
        {{ by_member }}keyhash,
        event_id,
        'A' as operation,
        event_sequence,
        null as operation_counts
    from applied_at_watermark
    union all
    select
        {{ by_member }}keyhash,
        event_id,
        'a' as operation,
        null as event_sequence,
        null as operation_counts
    from left_behind
    {%- if partitioned %}
    union all
    select
        {{ by_member }}keyhash,
        null as event_id,
        'P' as operation,
        event_sequence,
        null as operation_counts
    from partition_watermarks
    {%- endif %}
)
{%- endmacro %}


{% macro reads_partitions(stage) %}
{#- Whether a feed's events come from Kafka partitions (source.kafka): then each
    partition has its own watermark (a group's: each member's partitions). -#}
{%- if not execute -%}
    {{ return(false) }}
{%- endif -%}
{%- set table = hashcdc._stage_node(stage).config.meta.get('hashcdc_table', {}) -%}
{#- A group's feeds share their transport (hashcdc/config/rules.py): its first member's. -#}
{%- set table = (table.get('members') or [table])[0] -%}
{{ return((table.get('source') or {}).get('kafka') is not none) }}
{%- endmacro %}


{% macro feed_applied_events(incoming, state, previous, columns, hash_column='nonkeyhash', members=none) %}
{#- CTEs previous_watermark, previous_applied, delivered_events and applied_events: the
    date's loaded events that no earlier date applied (is_new_event, decided by the stage
    against the previous snapshot's W and A rows), each once (a file delivered twice, or an
    event re-sent, is applied once). members: of a group's stage and state, the rows of
    these members, each naming its own (`table_name`). -#}
{%- set business_date = hashcdc.business_date() -%}
{%- set incoming = hashcdc.stage_relation(incoming) -%}
{%- set member = ['table_name'] if members is not none else [] -%}
previous_watermark as (
    {{- hashcdc._previous_state_rows(
        state, previous, incoming, member + ['event_sequence'], operations=['W'],
        members=members) }}
),

previous_applied as (
    {#- The events applied at the previous watermark's position (their event_id). -#}
    {{- hashcdc._previous_state_rows(
        state, previous, incoming, member + ['keyhash', 'nonkeyhash', 'event_sequence'],
        operations=['A'], members=members) }}
),

delivered_events as (
    select
        {{ hashcdc._column_list(member + columns) }},
        keyhash,
        {{ hash_column }} as nonkeyhash,
        before_keyhash,
        event_op,
        event_sequence,
        event_id,
        {#- A P row's keyhash: the event's Kafka partition, its number as text. #}
        cast(cast(event_partition as string) as binary) as partition_keyhash
    from {{ incoming }}
    where
        business_date = date'{{ business_date }}'
        and _row_errors is null
        and is_new_event
        {{- hashcdc._of_members(members) }}
),

applied_events as (
    {#- An event delivered in two Kafka partitions (their number changed) is one too. #}
    select distinct
        {{ hashcdc._column_list(member + columns) }},
        keyhash,
        nonkeyhash,
        before_keyhash,
        event_op,
        event_sequence,
        event_id
    from delivered_events
)
{%- endmacro %}


{% macro feed_events_history(incoming, state, columns) %}
{#- Audit history: every event applied on the business date, with its sequence. -#}
{%- set business_date = hashcdc.business_date() -%}
{%- set previous = hashcdc.date_plan(state).before -%}
with

{{ hashcdc.feed_applied_events(incoming, state, previous, columns) }},

final as (
    select
        {{ hashcdc._column_list(columns) }},
        keyhash,
        nonkeyhash,
        before_keyhash,
        case event_op
            when 'c' then 'I'
            when 'u' then 'U'
            when 'd' then 'D'
            when 'r' then 'R'
            when 't' then 'T'
        end as operation,
        event_op,
        event_sequence,
        date'{{ business_date }}' as eff_start_date,
        date'{{ business_date }}' as business_date
    from applied_events
)

select * from final
{% endmacro %}


{% macro _join_truncate(member_of_row=none) %}
    {#- Joins CTE last_truncate: its one row, or (member_of_row: the expression naming a
        group's member of the row) the row of the row's member, if it has one. -#}
    {%- if not member_of_row -%}
        {{ return('cross join last_truncate') }}
    {%- endif -%}
    {{ return('left join last_truncate\n        on ' ~ member_of_row ~ ' = last_truncate.table_name') }}
{% endmacro %}
