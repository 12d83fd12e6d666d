{% test expected_operation_counts(model, expected, table_name) %}
{#-
    Compares the operation counts of the business date being run (recorded in the W row
    of the state's commit for the date) with a seed of expected counts (columns: table_name, business_date, relation
    ('current' or 'history'), operation, row_count). Dates without expected rows pass;
    for a date with expected rows, an operation missing from the seed is expected to be 0.
-#}
{%- set business_date = hashcdc.business_date() -%}
{%- set applied = hashcdc.applied_state_version(model, business_date) -%}
with

recorded_counts as (
    select explode(operation_counts) as (operation, row_count)
    from {{ model }}
    {%- if applied is not none %} version as of {{ applied.version }}{% endif %}
    where operation = 'W' {{- ' and false' if applied is none }}
),

actual_current as (
    select 'current' as relation, operation, row_count
    from recorded_counts
    where operation in ('I', 'U', 'N', 'X') and row_count > 0
),

actual_history as (
    select 'history' as relation, operation, row_count
    from recorded_counts
    where operation in ('I', 'U', 'D') and row_count > 0
),

actual_counts as (
    select * from actual_current
    union all
    select * from actual_history
),

expected_counts as (
    select relation, operation, row_count from {{ expected }}
    where table_name = '{{ table_name }}'
        and cast(business_date as date) = date'{{ business_date }}'
),

has_expectations as (
    select count(*) > 0 as is_checked from expected_counts
),

mismatches as (
    select
        coalesce(expected_counts.relation, actual_counts.relation) as relation,
        coalesce(expected_counts.operation, actual_counts.operation) as operation,
        coalesce(expected_counts.row_count, 0) as expected_row_count,
        coalesce(actual_counts.row_count, 0) as actual_row_count
    from expected_counts
    full outer join actual_counts
        on expected_counts.relation = actual_counts.relation
        and expected_counts.operation = actual_counts.operation
    cross join has_expectations
    where has_expectations.is_checked
        and coalesce(expected_counts.row_count, 0) != coalesce(actual_counts.row_count, 0)
)

select * from mismatches
{% endtest %}
