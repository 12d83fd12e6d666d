{% macro changelog_images(state, columns, members=none) %}
{#- Each change of the business date with its before and after images and the columns
    that differ, from the change data feed of the state's commit for the date: the before
    image of an update is its preimage there, a delete's before image is its D row.
    members: a table group's changelog (`columns` its slots): the changes of these members
    only, each naming its member (`table_name`), images matched within their member. -#}
{%- set member = 'table_name' if members is not none else none -%}
with

date_images as (
    {{ hashcdc.state_changes(
        state, hashcdc.business_date(), ([member] if member else []) + columns,
        images=['insert', 'update_preimage', 'update_postimage', 'delete'], member=member) }}
),

changes as (
    select * from date_images
    where not is_before_image
        {{- hashcdc._of_members(members) }}
),

previous_versions as (
    select
        {{ member ~ ',' if member }}
        keyhash,
        struct(
            {{ hashcdc._column_list(columns, indent=12) }}
        ) as before_image
    from date_images
    where is_before_image
        {{- hashcdc._of_members(members) }}
),

images as (
    select
        {{ 'changes.' ~ member ~ ',' if member }}
        changes.keyhash,
        changes.operation,
        case
            when changes.operation = 'D' then struct(
                {{ hashcdc._column_list(columns, 'changes', indent=16) }}
            )
            else previous_versions.before_image
        end as before_image,
        if(changes.operation = 'D', null, struct(
            {{ hashcdc._column_list(columns, 'changes', indent=12) }}
        )) as after_image,
        changes.business_date
    from changes
    left join previous_versions
        on changes.operation = 'U' and changes.keyhash = previous_versions.keyhash
        {{- hashcdc._same_member(member, 'changes', 'previous_versions') }}
),

final as (
    select
        {{ member ~ ',' if member }}
        keyhash,
        operation,
        before_image,
        after_image,
        array_compact(array(
            {%- for column in columns %}
            if(before_image.{{ adapter.quote(column) }} <=> after_image.{{ adapter.quote(column) }},
                null, '{{ column }}'){{ "," if not loop.last }}
            {%- endfor %}
        )) as changed_columns,
        business_date
    from images
)

select * from final
{% endmacro %}
