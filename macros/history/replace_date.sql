{% macro replace_date(target, source) %}
{#- Replace the business date's rows of a Delta history with the date's rows, in one
    commit: a rerun or a replay that yields fewer rows (or none) leaves none of the old
    ones, and a reader sees the date's old rows or its new ones, never a mix. Columns go
    by name, in the target's order. A date with no rows whose table holds none either
    (rejects, most dates) commits nothing. -#}
{%- set columns = adapter.get_columns_in_relation(target) | map(attribute='name') | list -%}
{#- A table group's history or rejects: the date of the members it runs (a sibling's stays). -#}
{%- set members = hashcdc.group_members_run(config.get('meta', {}).get('hashcdc_table_name'))
    if 'table_name' in columns else none -%}
{%- set of_date = "business_date = date'" ~ hashcdc.business_date() ~ "'" ~ hashcdc._of_members(members) -%}
{%- set incoming = hashcdc.incoming_rows(source) -%}
{%- if hashcdc._nothing_to_replace(target, incoming, of_date) -%}
    {{ return("select 'nothing to replace' as outcome") }}
{%- endif -%}
insert into {{ target }}
replace where {{ of_date }}
select
    {%- for column in columns %}
    {{ adapter.quote(column) }}{{ ',' if not loop.last }}
    {%- endfor %}
from {{ incoming }}
{% endmacro %}


{% macro _nothing_to_replace(target, incoming, of_date) %}
    {#- Whether the date brings no rows, known from their plan (a Python model's rows built
        empty: never a job), and the table holds none of the date. -#}
    {%- if not execute or not adapter.hashcdc_known_empty(incoming) -%}
        {{ return(false) }}
    {%- endif -%}
    {{ return(hashcdc._single_value('select 1 from ' ~ target ~ ' where ' ~ of_date ~ ' limit 1') is none) }}
{% endmacro %}
