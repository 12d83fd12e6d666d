{% test operation_counts_reconcile(model, incoming, extract_type) %}
{#-
    For the business date being run (or the latest one when none is given), the
    operation counts the date's diff recorded (the W row of the state's commit for the
    date) must reconcile with its inputs and with the state that commit left:
      loaded incoming rows           = I + U + N
      previous state rows            = U + N + D + X
      new state rows (I + U + N + X) = previous state rows + I - D   (counted in the state)
    a delta extract never tags D, and a full extract tags X only for keys whose row was
    rejected (kept as they were): X <= rejected rows. The rows the date wrote have one
    row per key and no null keyhash (the merge adds a key only where it has none). For a
    change feed (extract_type changes) the rows touched are at most the events loaded
    (I + U + N <= loaded events, instead of the first rule). The state has exactly one W
    row. Fails with one row per broken rule.
-#}
{%- set applied_versions = hashcdc.applied_state_versions(model) -%}
{%- if hashcdc.requested_business_date() is none -%}
    {%- set business_date = applied_versions[-1].business_date if applied_versions else '1900-01-01' -%}
{%- else -%}
    {%- set business_date = hashcdc.business_date() -%}
{%- endif -%}
{%- set applied = hashcdc.applied_state_version(model, business_date) -%}
{%- set incoming = hashcdc.stage_relation(incoming, business_date) -%}
with

state_rows as (
    {#- The state as the date's commit left it (nothing when it does not hold the date). #}
    select operation, keyhash, business_date, operation_counts from {{ model }}
    {%- if applied is none %}
    where false
    {%- else %}
    version as of {{ applied.version }}
    {%- endif %}
),

recorded_counts as (
    {#- The counts the date's diff recorded in the W row. #}
    select
        count(*) as watermark_rows,
        coalesce(max(operation_counts['I']), 0) as inserted,
        coalesce(max(operation_counts['U']), 0) as updated,
        coalesce(max(operation_counts['N']), 0) as unchanged,
        coalesce(max(operation_counts['D']), 0) as deleted,
        coalesce(max(operation_counts['X']), 0) as not_supplied,
        coalesce(max(operation_counts['state_rows_before']), 0) as previous_state_rows
    from state_rows
    where operation = 'W'
),

state_counts as (
    {#- The state itself after the commit, and the keys the date wrote. #}
    select
        count_if(operation in ('I', 'U', 'N', 'X')) as new_state_rows,
        count_if(operation in ('I', 'U', 'N', 'X') and keyhash is null) as null_keys,
        count_if(business_date = date'{{ business_date }}' and operation in ('I', 'U', 'N', 'X'))
            as written_rows,
        count(distinct if(
            business_date = date'{{ business_date }}' and operation in ('I', 'U', 'N', 'X'),
            keyhash, null)) as written_keys
    from state_rows
),

operation_counts as (
    select * from recorded_counts cross join state_counts
),

incoming_rows as (
    select
        count_if(_row_errors is null) as row_count,
        count_if(_row_errors is not null) as rejected_count
    from {{ incoming }}
    where business_date = date'{{ business_date }}'
),

rules as (
    {%- if extract_type == 'changes' %}
    select
        'I + U + N <= loaded events' as rule,
        least(inserted + updated + unchanged, incoming_rows.row_count) as expected,
        inserted + updated + unchanged as actual
    from operation_counts cross join incoming_rows
    {%- else %}
    select
        'loaded incoming rows = I + U + N' as rule,
        incoming_rows.row_count as expected,
        inserted + updated + unchanged as actual
    from operation_counts cross join incoming_rows
    {%- endif %}
    union all
    select
        'one W row (the counts of the date)' as rule,
        1 as expected,
        watermark_rows as actual
    from operation_counts
    union all
    select
        'previous state rows = U + N + D + X' as rule,
        previous_state_rows as expected,
        updated + unchanged + deleted + not_supplied as actual
    from operation_counts
    union all
    select
        'one row per keyhash among the rows the date wrote' as rule,
        written_rows as expected,
        written_keys as actual
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
        previous_state_rows + inserted - deleted as expected,
        new_state_rows as actual
    from operation_counts
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
