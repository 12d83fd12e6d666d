{% macro replace_date(target, source) %}
{#- Replace the business date's rows of a Delta history with the date's rows, in one
    commit: a rerun or a replay that yields fewer rows (or none) leaves none of the old
    ones, and a reader sees the date's old rows or its new ones, never a mix. Columns go
    by name, in the target's order. -#}
{%- set columns = adapter.get_columns_in_relation(target) | map(attribute='name') | list -%}
{#- A table group's history or rejects: the date of the members it runs (a sibling's stays). -#}
{%- set members = hashcdc.group_members_run(config.get('meta', {}).get('hashcdc_table_name'))
    if 'table_name' in columns else none -%}
insert into {{ target }}
replace where business_date = date'{{ hashcdc.business_date() }}'{{ hashcdc._of_members(members) }}
select
    {%- for column in columns %}
    {{ adapter.quote(column) }}{{ ',' if not loop.last }}
    {%- endfor %}
from {{ hashcdc.incoming_rows(source) }}
{% endmacro %}
