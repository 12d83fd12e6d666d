{% test operation_counts_reconcile(model, incoming, extract_type) %}
{#-
    For the business date being run (or the latest one when none is given), the
    operation counts of a state snapshot must reconcile with its inputs:
      loaded incoming rows           = I + U + N
      previous state rows            = U + N + D + X
      new state rows (I + U + N + X) = previous state rows + I - D
    a delta extract never tags D, and a full extract tags X only for keys whose row was
    rejected (kept as they were): X <= rejected rows. The new state has one row per key
    and no null keyhash (the `unique` and `not_null` tests of the current table, in the
    same scan of the snapshot as the counts; the snapshot is bucketed by keyhash, so
    counting distinct keys needs no shuffle). For a change feed (extract_type
    changes) the rows touched are at most the events loaded (I + U + N <= loaded events,
    instead of the first rule), and every snapshot has exactly one watermark (W) row.
    Fails with one row per broken rule.
-#}
{%- if hashcdc.requested_business_date() is none -%}
    {%- set probe -%}
        select cast(max(business_date) as string) from {{ model }}
    {%- endset -%}
    {%- set business_date = hashcdc._single_value(probe) or '1900-01-01' -%}
{%- else -%}
    {%- set business_date = hashcdc.business_date() -%}
{%- endif -%}
{%- set previous_date = hashcdc.previous_state_date(model, business_date) -%}
with

snapshot as (
    select
        operation,
        if(operation in ('I', 'U', 'N', 'X'), keyhash, null) as new_state_keyhash,
        operation in ('I', 'U', 'N', 'X') and keyhash is null as is_null_key
    from {{ model }}
    where business_date = date'{{ business_date }}'
),

operation_counts as (
    select
        count_if(operation = 'I') as inserted,
        count_if(operation = 'U') as updated,
        count_if(operation = 'N') as unchanged,
        count_if(operation = 'D') as deleted,
        count_if(operation = 'X') as not_supplied,
        count_if(operation = 'W') as watermark_rows,
        count_if(operation in ('I', 'U', 'N', 'X')) as new_state_rows,
        count(distinct new_state_keyhash) as new_state_keys,
        count_if(is_null_key) as null_keys
    from snapshot
),

incoming_rows as (
    select
        count_if(_row_errors is null) as row_count,
        count_if(_row_errors is not null) as rejected_count
    from {{ incoming }}
    where business_date = date'{{ business_date }}'
),

previous_state_rows as (
    {%- if previous_date is none %}
    select cast(0 as bigint) as row_count
    {%- else %}
    select count(*) as row_count from {{ model }}
    where business_date = date'{{ previous_date }}' and operation in ('I', 'U', 'N', 'X')
    {%- endif %}
),

rules as (
    {%- if extract_type == 'changes' %}
    select
        'I + U + N <= loaded events' as rule,
        least(inserted + updated + unchanged, incoming_rows.row_count) as expected,
        inserted + updated + unchanged as actual
    from operation_counts cross join incoming_rows
    union all
    select
        'one watermark row' as rule,
        1 as expected,
        watermark_rows as actual
    from operation_counts
    {%- else %}
    select
        'loaded incoming rows = I + U + N' as rule,
        incoming_rows.row_count as expected,
        inserted + updated + unchanged as actual
    from operation_counts cross join incoming_rows
    {%- endif %}
    union all
    select
        'previous state rows = U + N + D + X' as rule,
        previous_state_rows.row_count as expected,
        updated + unchanged + deleted + not_supplied as actual
    from operation_counts cross join previous_state_rows
    union all
    select
        'one row per keyhash in the new state' as rule,
        new_state_rows - null_keys as expected,
        new_state_keys as actual
    from operation_counts
    union all
    select
        'no null keyhash in the new state' as rule,
        0 as expected,
        null_keys as actual
    from operation_counts
    union all
    select
        'new state rows = previous state rows + I - D' as rule,
        previous_state_rows.row_count + inserted - deleted as expected,
        new_state_rows as actual
    from operation_counts cross join previous_state_rows
    {%- if extract_type == 'full' %}
    union all
    select
        'X rows <= rejected rows in a full extract' as rule,
        least(not_supplied, rejected_count) as expected,
        not_supplied as actual
    from operation_counts cross join incoming_rows
    {%- elif extract_type == 'delta' %}
    union all
    select
        'no D rows in a delta extract' as rule,
        0 as expected,
        deleted as actual
    from operation_counts
    {%- endif %}
),

broken_rules as (
    select
        '{{ business_date }}' as business_date,
        rule,
        expected,
        actual
    from rules
    where expected != actual
)

select * from broken_rules
{% endtest %}
