{% macro current_state(state, columns, counted=false) %}
    {{ return(adapter.dispatch('current_state', 'hashcdc')(state, columns, counted)) }}
{% endmacro %}


{% macro default__current_state(state, columns, counted) %}
{#- The rows of the latest snapshot. counted: a table without a key keeps identical rows
    once with their number of copies; the current table shows each copy as a row. -#}
with

state_snapshots as (
    select * from {{ state }}
),

latest_snapshot as (
    select * from state_snapshots
    where business_date = (select max(business_date) from state_snapshots)
),

current_rows as (
    select
        {{ hashcdc._column_list(columns) }},
        keyhash,
        nonkeyhash,
        operation,
        eff_start_date
    from latest_snapshot
    {%- if counted %}
    lateral view explode(sequence(1, copies)) copy_numbers as copy_number
    {%- endif %}
    where operation in ('I', 'U', 'N', 'X')
)

select * from current_rows
{% endmacro %}
