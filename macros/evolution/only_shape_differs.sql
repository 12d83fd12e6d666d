{% macro only_shape_differs(incoming_row, shape_changes, business_date) %}
{#- A condition on a compared pair of rows (`incoming_row` and `previous_row` structs, and
    `previous_seen_date`, the date the previous version's values were last supplied): true
    when they are equal on every compared column both versions carry. A column added on
    date A is not carried by a version seen before A (unless it is added_as_update); a
    column removed is not carried by today's row; a column widened from float or date
    since W compares at its earlier type against a version seen before W.
    shape_changes: {'compared': [the compared columns], 'changed': {column: {added,
    added_as_update, removed, widened_from, widened_since}}}; without changed columns:
    false (the hashes decide alone). -#}
{%- if not shape_changes or not shape_changes.get('changed') -%}
    {{ return('false') }}
{%- endif -%}
{%- set seen = "coalesce(previous_seen_date, date'0001-01-01')" -%}
{%- set conditions = [] -%}
{%- for column in shape_changes.compared -%}
    {%- set change = shape_changes.changed.get(column, {}) -%}
    {%- set added = change.get('added') -%}
    {%- set removed = change.get('removed') -%}
    {%- set carried_today = (added is none or added <= business_date)
        and (removed is none or business_date < removed) -%}
    {%- if carried_today -%}
        {%- set incoming_value = incoming_row ~ '.' ~ adapter.quote(column) -%}
        {%- set previous_value = 'previous_row.' ~ adapter.quote(column) -%}
        {%- set same = incoming_value ~ ' <=> ' ~ previous_value -%}
        {%- if change.get('widened_from') in ('float', 'date') -%}
            {%- set same_before = 'cast(' ~ incoming_value ~ ' as ' ~ change.widened_from
                ~ ') <=> cast(' ~ previous_value ~ ' as ' ~ change.widened_from ~ ')' -%}
            {%- set same = 'if(' ~ seen ~ " < date'" ~ change.widened_since ~ "', "
                ~ same_before ~ ', ' ~ same ~ ')' -%}
        {%- endif -%}
        {%- if added is not none and not change.get('added_as_update') -%}
            {%- set same = '(' ~ seen ~ " < date'" ~ added ~ "' or " ~ same ~ ')' -%}
        {%- endif -%}
        {%- do conditions.append(same) -%}
    {%- endif -%}
{%- endfor -%}
{{ return('(' ~ (conditions | join('\n            and ') or 'true') ~ ')') }}
{% endmacro %}


{% macro _only_shape_differs_of(row, member, member_changes, shape_changes, business_date) %}
    {#- only_shape_differs of a table's row, or of a group's (member: the column naming
        its member, member_changes: each member's shape changes). -#}
    {%- if not member_changes -%}
        {{ return(hashcdc.only_shape_differs(row, shape_changes, business_date)) }}
    {%- endif -%}
    {%- set cases = [] -%}
    {%- for name, changes in member_changes.items() -%}
        {%- do cases.append("when '" ~ name ~ "' then "
            ~ hashcdc.only_shape_differs(row, changes, business_date)) -%}
    {%- endfor -%}
    {{ return('case ' ~ member ~ '\n            ' ~ cases | join('\n            ')
        ~ '\n            else false\n        end') }}
{% endmacro %}
