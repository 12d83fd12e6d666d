{% test operation_counts_reconcile(model, incoming, extract_type) %}
{#-
    For the business date being run (or the latest one when none is given), the
    operation counts of a state snapshot must reconcile with its inputs:
      incoming rows                 = I + U + N
      previous state rows           = U + N + D (full)   /  U + N + X (delta)
      new state rows (I + U + N + X) = previous state rows + I - D
    and a full extract never tags X, a delta extract never tags D.
    Fails with one row per broken rule.
-#}
{%- set requested = var('business_date', none) -%}
{%- if requested is none or requested | string in ('', 'None') -%}
    {%- set business_date = hashcdc._single_value(
        "select cast(max(business_date) as string) from " ~ model) or '1900-01-01' -%}
{%- else -%}
    {%- set business_date = hashcdc.business_date() -%}
{%- endif -%}
{%- set previous_date = hashcdc.previous_state_date(model, business_date) -%}
{%- set missing_operation = 'D' if extract_type == 'full' else 'X' -%}
{%- set unexpected_operation = 'X' if extract_type == 'full' else 'D' -%}
with

snapshot as (
    select operation from {{ model }}
    where business_date = date'{{ business_date }}'
),

operation_counts as (
    select
        count_if(operation = 'I') as inserted,
        count_if(operation = 'U') as updated,
        count_if(operation = 'N') as unchanged,
        count_if(operation = '{{ missing_operation }}') as missing,
        count_if(operation = '{{ unexpected_operation }}') as unexpected,
        count_if(operation != 'D') as new_state_rows
    from snapshot
),

incoming_rows as (
    select count(*) as row_count from {{ incoming }}
    where business_date = date'{{ business_date }}'
),

previous_state_rows as (
    {%- if previous_date is none %}
    select cast(0 as bigint) as row_count
    {%- else %}
    select count(*) as row_count from {{ model }}
    where business_date = date'{{ previous_date }}' and operation != 'D'
    {%- endif %}
),

rules as (
    select
        'incoming rows = I + U + N' as rule,
        incoming_rows.row_count as expected,
        inserted + updated + unchanged as actual
    from operation_counts cross join incoming_rows
    union all
    select
        'previous state rows = U + N + {{ missing_operation }}' as rule,
        previous_state_rows.row_count as expected,
        updated + unchanged + missing as actual
    from operation_counts cross join previous_state_rows
    union all
    select
        'new state rows = previous state rows + I{{ " - D" if extract_type == "full" else "" }}' as rule,
        previous_state_rows.row_count + inserted
        {%- if extract_type == 'full' %} - missing{% endif %} as expected,
        new_state_rows as actual
    from operation_counts cross join previous_state_rows
    union all
    select
        'no {{ unexpected_operation }} rows in a {{ extract_type }} extract' as rule,
        0 as expected,
        unexpected as actual
    from operation_counts
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
