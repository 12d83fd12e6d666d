{% macro history_changes(state, columns, extra_columns=[]) %}
{#- The net changes of the business date: the I, U and D rows of the state's commit for
    the date, read from its change data feed. extra_columns: change feeds also keep the
    sequence of the last event applied (and copies, without a key). -#}
with

changes as (
    {{ hashcdc.state_changes(state, hashcdc.business_date(), columns + extra_columns) }}
)

select * from changes
{% endmacro %}


{% macro state_changes(state, business_date, columns, images=['insert', 'update_postimage', 'delete']) %}
{#- A select of the I, U and D rows the state's commit for `business_date` made (its
    change data feed: an insert or update image whose operation is I or U, and every
    deleted key as a D row with its last values); `images` also
    'update_preimage' for the values an update replaced (operation U, as its postimage).
    No rows when the state does not hold the date. -#}
{%- set applied = hashcdc.applied_state_version(state, business_date) -%}
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
        and operation not in ('W', 'A')
        and (_change_type in ('delete', 'update_preimage') or operation in ('I', 'U'))
    {%- endif %}
{%- endmacro %}
