{% test operations_of_date(model, column_name, values) %}
{#-
    The rows a history holds for the business date being run all have one of `values` in
    the tested column (the operation; not null). Only the date's partition is read: earlier dates were
    checked when they ran, so the test costs the date's rows, not the whole history's.
    Without a date (a plain `dbt test`), every date is checked. Fails with one row per
    operation found that is not one of `values`, with its number of rows.
-#}
{%- set business_date = hashcdc.requested_business_date() -%}
with

rows_checked as (
    select {{ column_name }} as operation from {{ model }}
    {%- if business_date is not none %}
    where business_date = date'{{ hashcdc.business_date() }}'
    {%- endif %}
),

unexpected_operations as (
    select
        operation,
        count(*) as row_count
    from rows_checked
    where operation is null or operation not in ('{{ values | join("', '") }}')
    group by operation
)

select * from unexpected_operations
{% endtest %}
