{% macro current_state(state, columns, counted=false, untouched_operation='N') %}
{#- The state's rows, each with the operation of the latest date: the one it was written
    with on that date (the W row's), else `untouched_operation` (N for a full extract, X for
    a delta or a feed: not supplied). counted: a table without a key keeps identical rows
    once with their number of copies; the current table shows each copy as a row. -#}
with

state_rows as (
    select * from {{ state }}
),

latest_date as (
    select max(business_date) as business_date
    from state_rows
    where operation = 'W'
),

current_rows as (
    select
        {{ hashcdc._column_list(columns, 'state_rows') }},
        state_rows.keyhash,
        state_rows.nonkeyhash,
        if(
            state_rows.business_date = latest_date.business_date,
            state_rows.operation,
            '{{ untouched_operation }}'
        ) as operation,
        state_rows.eff_start_date
    from state_rows
    cross join latest_date
    {%- if counted %}
    lateral view explode(sequence(1, copies)) copy_numbers as copy_number
    {%- endif %}
    where state_rows.operation in ('I', 'U', 'N', 'X')
)

select * from current_rows
{% endmacro %}
