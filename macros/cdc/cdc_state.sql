{% macro cdc_state(incoming, table_name, extract_type, columns, max_delete_fraction=0.5, hash_column='nonkeyhash', shape_changes={}) %}
    {{ return(adapter.dispatch('cdc_state', 'hashcdc')(
        incoming, table_name, extract_type, columns, max_delete_fraction, hash_column,
        shape_changes)) }}
{% endmacro %}


{% macro default__cdc_state(incoming, table_name, extract_type, columns, max_delete_fraction, hash_column, shape_changes) %}
{%- if extract_type not in ('full', 'delta') -%}
    {{ exceptions.raise_compiler_error(
        "cdc_state: extract_type must be 'full' or 'delta' (change feeds use cdc_feed_state), got '"
        ~ extract_type ~ "'") }}
{%- endif -%}
{%- set business_date = hashcdc.business_date() -%}
{%- set previous_date = hashcdc.checked_previous_state_date(business_date, table_name) -%}
{%- set shape_changes = hashcdc._with_recorded_additions(shape_changes, table_name, previous_date) -%}
{%- if previous_date is not none and extract_type == 'full' -%}
    {%- do hashcdc.assert_no_mass_delete(
        this, incoming, table_name, business_date, previous_date, max_delete_fraction) -%}
{%- endif -%}
{%- set missing_operation = 'D' if extract_type == 'full' else 'X' -%}
with

incoming as (
    select
        {{ hashcdc._column_list(columns) }},
        keyhash,
        {{ hash_column }} as nonkeyhash
    from {{ incoming }}
    where business_date = date'{{ business_date }}' and _row_errors is null
),
{%- if extract_type == 'full' %}

rejected_keys as (
    {#- Keys whose row was rejected are kept as they were (X), not deleted. #}
    select distinct keyhash
    from {{ incoming }}
    where business_date = date'{{ business_date }}' and _row_errors is not null
),
{%- endif %}

previous_state as (
    {{- hashcdc._previous_snapshot(
        this, previous_date, 'incoming', columns + ['keyhash', 'nonkeyhash'],
        typed_extras={'eff_start_date': 'date', 'seen_date': 'date'}) }}
),

compared as (
    {#- Both sides arrive bucketed by keyhash: the join needs no exchange. #}
    select {{ "/*+ broadcast(rejected_keys) */" if extract_type == 'full' }}
        incoming.keyhash as incoming_keyhash,
        incoming.nonkeyhash as incoming_nonkeyhash,
        previous_state.keyhash as previous_keyhash,
        previous_state.nonkeyhash as previous_nonkeyhash,
        previous_state.eff_start_date as previous_eff_start_date,
        previous_state.seen_date as previous_seen_date,
        {%- if extract_type == 'full' %}
        rejected_keys.keyhash is not null as is_rejected_key,
        {%- else %}
        false as is_rejected_key,
        {%- endif %}
        struct(
            {{ hashcdc._column_list(columns, 'incoming', indent=12) }}
        ) as incoming_row,
        struct(
            {{ hashcdc._column_list(columns, 'previous_state', indent=12) }}
        ) as previous_row
    from incoming
    full outer join previous_state
        on incoming.keyhash = previous_state.keyhash
    {%- if extract_type == 'full' %}
    left join rejected_keys
        on previous_state.keyhash = rejected_keys.keyhash
    {%- endif %}
),

reshaped as (
    {#- is_reshaped: the hashes differ only because the table's shape changed (a column
        added, removed or widened since the previous version was seen). #}
    select
        compared.*,
        incoming_nonkeyhash != previous_nonkeyhash
        and {{ hashcdc.only_shape_differs('incoming_row', shape_changes, business_date) }}
            as is_reshaped
    from compared
),

operations_tagged as (
    select
        case
            when previous_keyhash is null then 'I'
            when incoming_keyhash is null and is_rejected_key then 'X'
            when incoming_keyhash is null then '{{ missing_operation }}'
            when incoming_nonkeyhash != previous_nonkeyhash and not is_reshaped then 'U'
            else 'N'
        end as operation,
        coalesce(incoming_keyhash, previous_keyhash) as keyhash,
        incoming_nonkeyhash,
        previous_nonkeyhash,
        previous_eff_start_date,
        previous_seen_date,
        is_reshaped,
        incoming_row,
        previous_row
    from reshaped
),

new_state as (
    select
        if(operation in ('I', 'U') or is_reshaped, incoming_row, previous_row) as state_row,
        keyhash,
        if(
            operation in ('I', 'U') or is_reshaped, incoming_nonkeyhash, previous_nonkeyhash
        ) as nonkeyhash,
        operation,
        if(
            operation in ('I', 'U', 'D'), date'{{ business_date }}', previous_eff_start_date
        ) as eff_start_date,
        if(operation = 'X', previous_seen_date, date'{{ business_date }}') as seen_date,
        date'{{ business_date }}' as business_date
    from operations_tagged
),

final as (
    select
        {{ hashcdc._column_list(columns, 'state_row') }},
        keyhash,
        nonkeyhash,
        operation,
        eff_start_date,
        seen_date,
        business_date
    from new_state
)

select {{ hashcdc._first_snapshot_layout(previous_date) }} * from final
{% endmacro %}
