{% macro member_rows(relation, table_name, placements, trailing) %}
{#- A member table's rows of a table group's relation (a row's `table_name`), its own
    columns named and typed again from the group's slots. placements: [column, slot,
    type] in the member's column order; trailing: hashcdc's columns, as they are. -#}
with

group_rows as (
    select * from {{ relation }}
),

member_rows as (
    select
        {%- for column, slot, data_type in placements %}
        cast({{ adapter.quote(slot) }} as {{ data_type }}) as {{ adapter.quote(column) }},
        {%- endfor %}
        {{ hashcdc._column_list(trailing) }}
    from group_rows
    where table_name = '{{ table_name }}'
)

select * from member_rows
{% endmacro %}
