{% macro history_changes(state, columns, extra_columns=[]) %}
    {{ return(adapter.dispatch('history_changes', 'hashcdc')(state, columns, extra_columns)) }}
{% endmacro %}


{% macro default__history_changes(state, columns, extra_columns) %}
{#- The net changes of the business date: its snapshot's I, U and D rows. extra_columns:
    change feeds also keep the sequence of the last event applied (and copies, without a
    key). -#}
{%- set business_date = hashcdc.business_date() -%}
with

state_snapshot as (
    select * from {{ state }}
    where business_date = date'{{ business_date }}'
),

changes as (
    select
        {{ hashcdc._column_list(columns + extra_columns) }},
        keyhash,
        nonkeyhash,
        operation,
        eff_start_date,
        business_date
    from state_snapshot
    where operation in ('I', 'U', 'D')
)

select * from changes
{% endmacro %}
