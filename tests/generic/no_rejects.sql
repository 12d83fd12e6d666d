{% test no_rejects(model, table_name) %}
{#-
    Warns (severity warn in the generated properties) when rows of the business date's
    extract were quarantined, with their number per reason, so that `dbt build` shows them.
-#}
{%- set business_date = hashcdc.business_date() -%}
with

rejects_of_date as (
    select reasons from {{ model }}
    where business_date = date'{{ business_date }}'
),

reasons_counted as (
    select
        '{{ table_name }}' as table_name,
        reason,
        count(*) as rejected_rows
    from rejects_of_date
    lateral view explode(reasons) as reason
    group by reason
)

select * from reasons_counted
{% endtest %}
