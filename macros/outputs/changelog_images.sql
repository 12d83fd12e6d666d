{% macro changelog_images(state, columns) %}
    {{ return(adapter.dispatch('changelog_images', 'hashcdc')(state, columns)) }}
{% endmacro %}


{% macro default__changelog_images(state, columns) %}
{#- Each change of the business date with its before and after images and the columns
    that differ. The before image of an update comes from the previous snapshot, joined
    on keyhash for the updated keys only; a delete's before image is its D row. -#}
{%- set business_date = hashcdc.business_date() -%}
{%- set previous_date = hashcdc.previous_state_date(state, business_date) -%}
with

changes as (
    select * from {{ state }}
    where business_date = date'{{ business_date }}' and operation in ('I', 'U', 'D')
),

previous_snapshot as (
    {{- hashcdc._previous_snapshot(state, previous_date, 'changes', columns + ['keyhash']) }}
),

previous_versions as (
    select
        keyhash,
        struct(
            {{ hashcdc._column_list(columns, indent=12) }}
        ) as before_image
    from previous_snapshot
),

images as (
    select
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
),

final as (
    select
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
