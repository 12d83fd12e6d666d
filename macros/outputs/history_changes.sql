{% macro history_changes(state, columns, extra_columns=[], member=none) %}
{#- The net changes of the business date: the I, U and D rows of the state's commit for
    the date, read from its change data feed. extra_columns: change feeds also keep the
    sequence of the last event applied (and copies, without a key). member: a table
    group's (the column among `columns` naming a row's member). -#}
with

changes as (
    {{ hashcdc.state_changes(
        state, hashcdc.business_date(), columns + extra_columns, member=member) }}
)

select * from changes
{% endmacro %}


{% macro state_changes(state, business_date, columns, images=['insert', 'update_postimage', 'delete'], member=none) %}
{#- A select of the I, U and D rows the state's commits for `business_date` made (its
    change data feed: an insert or update image whose operation is I or U, and every
    deleted key as a D row with its values before the date); `images` also
    'update_preimage' for the values an update replaced (operation U, as its postimage).
    A date applied by several commits (the stream's micro-batches and the run that closed
    it) is netted per key over them (_net_state_changes). No rows when the state does
    not hold the date. member: a table group's state (the column among `columns`
    naming a row's member): keys are netted within their member. -#}
{%- set applied = hashcdc.applied_state_version(state, business_date) -%}
{%- if applied is not none and applied.first_version is not none
      and applied.first_version < applied.version -%}
    {{ return(hashcdc._net_state_changes(state, business_date, columns, images, applied, member)) }}
{%- endif %}
    select
        {{ hashcdc._column_list(columns) }},
        keyhash,
        nonkeyhash,
        if(_change_type = 'delete', 'D', operation) as operation,
        {%- if 'update_preimage' in images %}
        _change_type = 'update_preimage' as is_before_image,
        {%- endif %}
        date'{{ business_date }}' as eff_start_date,
        date'{{ business_date }}' as business_date
    {%- if applied is none %}
    from {{ state }}
    where false
    {%- else %}
    from table_changes('{{ state.schema }}.{{ state.identifier }}', {{ applied.version }}, {{ applied.version }})
    where
        _change_type in ('{{ images | join("', '") }}')
        and operation not in ('W', 'A', 'P')
        and (_change_type in ('delete', 'update_preimage') or operation in ('I', 'U'))
    {%- endif %}
{%- endmacro %}


{% macro _net_state_changes(state, business_date, columns, images, applied, member=none) %}
{#- state_changes of a date its state applied in several commits (`applied`: its
    first_version and version): per key, the first change of the range says whether the
    key was there before the date (an update's preimage or a delete) and with which
    values, the last whether it is there after it. A key there after it whose last image
    is tagged I or U (the run that closed the date tags the date's net operation) is that
    row; a key there before and not after is D with its values before the date; a key
    added and removed within the date, or supplied again unchanged (N), is no change.
    A single commit gives the same rows as state_changes' own select. -#}
    with

    changes as (
        select
            {{ member ~ ', ' if member }}keyhash,
            {#- An update's preimage comes before its postimage in a commit. #}
            _commit_version * 2 + if(_change_type = 'update_preimage', 0, 1) as position,
            struct(
                struct(
                    {{ hashcdc._column_list(columns, indent=20) }}
                ) as image,
                nonkeyhash,
                operation,
                _change_type
            ) as change
        from table_changes('{{ state.schema }}.{{ state.identifier }}', {{ applied.first_version }}, {{ applied.version }})
        where operation not in ('W', 'A', 'P')
    ),

    key_changes as (
        select
            {{ member ~ ', ' if member }}keyhash,
            min_by(change, position) as first_change,
            max_by(change, position) as last_change
        from changes
        group by {{ member ~ ', ' if member }}keyhash
    ),

    net_changes as (
        select
            keyhash,
            inline(array_compact(array(
                if(
                    last_change._change_type in ('insert', 'update_postimage')
                    and last_change.operation in ('I', 'U'),
                    struct(
                        last_change.image as image, last_change.nonkeyhash as nonkeyhash,
                        last_change.operation as operation, false as is_before_image),
                    null),
                if(
                    first_change._change_type in ('update_preimage', 'delete')
                    and last_change._change_type = 'delete',
                    struct(
                        first_change.image as image, first_change.nonkeyhash as nonkeyhash,
                        'D' as operation, false as is_before_image),
                    null)
                {%- if 'update_preimage' in images %},
                if(
                    first_change._change_type in ('update_preimage', 'delete')
                    and last_change._change_type = 'update_postimage'
                    and last_change.operation = 'U',
                    struct(
                        first_change.image as image, first_change.nonkeyhash as nonkeyhash,
                        'U' as operation, true as is_before_image),
                    null)
                {%- endif %}
            )))
        from key_changes
    )

    select
        {{ hashcdc._column_list(columns, 'net_changes.image') }},
        keyhash,
        nonkeyhash,
        operation,
        {%- if 'update_preimage' in images %}
        is_before_image,
        {%- endif %}
        date'{{ business_date }}' as eff_start_date,
        date'{{ business_date }}' as business_date
    from net_changes
{%- endmacro %}
