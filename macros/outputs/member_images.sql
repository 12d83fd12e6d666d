{% macro member_images(relation, table_name, placements) %}
{#- A member table's changes of a table group's changelog: its before and after images
    and changed columns named and typed again from the group's slots. placements:
    [column, slot, type] in the member's column order. -#}
with

group_images as (
    select * from {{ relation }}
),

member_images as (
    select
        keyhash,
        operation,
        {%- for image in ['before_image', 'after_image'] %}
        if({{ image }} is null, null, named_struct(
            {%- for column, slot, data_type in placements %}
            '{{ column }}', cast({{ image }}.{{ adapter.quote(slot) }} as {{ data_type }}){{ ',' if not loop.last }}
            {%- endfor %}
        )) as {{ image }},
        {%- endfor %}
        transform(changed_columns, changed -> case changed
            {%- for column, slot, data_type in placements %}
            when '{{ slot }}' then '{{ column }}'
            {%- endfor %}
        end) as changed_columns,
        business_date
    from group_images
    where table_name = '{{ table_name }}'
)

select * from member_images
{% endmacro %}
