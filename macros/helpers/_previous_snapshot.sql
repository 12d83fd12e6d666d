{% macro _previous_snapshot(state, previous_date, empty_like, columns, typed_extras={}, operations=['I', 'U', 'N', 'X']) %}
{#- A select of the previous state snapshot's rows with the given operations; before the
    first date (previous_date none), of no rows with the same columns and types: `columns`
    are then taken from `empty_like` (a relation or CTE that has them), `typed_extras`
    (name -> type) are typed nulls. -#}
{%- set expressions = [] -%}
{%- for column in columns -%}
    {%- do expressions.append(adapter.quote(column)) -%}
{%- endfor -%}
{%- for name, data_type in typed_extras.items() -%}
    {%- if previous_date is none -%}
        {%- do expressions.append("cast(null as " ~ data_type ~ ") as " ~ adapter.quote(name)) -%}
    {%- else -%}
        {%- do expressions.append(adapter.quote(name)) -%}
    {%- endif -%}
{%- endfor %}
    select
        {{ expressions | join(',\n        ') }}
    {%- if previous_date is none %}
    from {{ empty_like }}
    where false
    {%- else %}
    from {{ state }}
    where
        business_date = date'{{ previous_date }}'
        and operation in ('{{ operations | join("', '") }}')
    {%- endif %}
{%- endmacro %}
