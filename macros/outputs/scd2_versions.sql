{% macro scd2_versions(history, columns, audit=false) %}
{#- Every version of every key from the history, with explicit validity: a version is
    valid from its business date until the next change of its key. A delete is a version
    of its own (is_deleted), valid until the key is inserted again. audit: the history of
    a change feed holds every event; versions follow the event sequence within a date, and
    an update that moves a row to another key ends the old key's version. -#}
with

changes as (
    select
        {{ hashcdc._column_list(columns) }},
        keyhash,
        nonkeyhash,
        operation,
        business_date,
        {{ "event_sequence" if audit else "cast(null as int) as event_sequence" }}
    from {{ history }}
    {%- if audit %}
    where operation != 'T'
    union all
    select
        {%- for column in columns %}
        null as {{ adapter.quote(column) }},
        {%- endfor %}
        before_keyhash as keyhash,
        null as nonkeyhash,
        'D' as operation,
        business_date,
        event_sequence
    from {{ history }}
    where before_keyhash is not null
    {%- endif %}
),

versions as (
    select
        {{ hashcdc._column_list(columns) }},
        keyhash,
        nonkeyhash,
        operation,
        business_date as valid_from,
        lead(business_date) over (
            partition by keyhash order by business_date, event_sequence
        ) as valid_to
    from changes
),

final as (
    select
        {{ hashcdc._column_list(columns) }},
        keyhash,
        nonkeyhash,
        operation,
        valid_from,
        valid_to,
        valid_to is null and operation != 'D' as is_current,
        operation = 'D' as is_deleted
    from versions
)

select * from final
{% endmacro %}
