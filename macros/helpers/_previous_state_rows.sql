{% macro _previous_state_rows(state, previous, empty_like, columns, typed_extras={}, operations=['I', 'U', 'N', 'X'], members=none) %}
{#- A select of the previous state's rows with the given operations, read at the version
    of `previous` (previous_state's dict: that version, whatever was committed after it;
    `last_version` none: the table as it is when the query runs);
    before the first date (previous none), of no rows with the same columns and types:
    `columns` are then taken from `empty_like` (a relation or CTE that has them),
    `typed_extras` (name -> type) are typed nulls. members (a group's state): only the
    rows of these members (`table_name`), so a member not run is not compared. -#}
{%- set expressions = [] -%}
{%- for column in columns -%}
    {%- do expressions.append(adapter.quote(column)) -%}
{%- endfor -%}
{%- for name, data_type in typed_extras.items() -%}
    {%- if previous is none -%}
        {%- do expressions.append("cast(null as " ~ data_type ~ ") as " ~ adapter.quote(name)) -%}
    {%- else -%}
        {%- do expressions.append(adapter.quote(name)) -%}
    {%- endif -%}
{%- endfor %}
    select
        {{ expressions | join(',\n        ') }}
    {%- if previous is none %}
    from {{ empty_like }}
    where false
    {%- else %}
    from {{ state }}{% if previous.last_version is not none %} version as of {{ previous.last_version }}{% endif %}
    where operation in ('{{ operations | join("', '") }}')
    {%- if members is not none %}
        and table_name in ('{{ members | list | join("', '") }}')
    {%- endif %}
    {%- endif %}
{%- endmacro %}
