{% macro previous_state_date(state, business_date) %}
    {{ return(adapter.dispatch('previous_state_date', 'hashcdc')(state, business_date)) }}
{% endmacro %}


{% macro default__previous_state_date(state, business_date) %}
    {#- The latest business date before `business_date` with a state snapshot, or none. -#}
    {%- set probe -%}
        select cast(max(business_date) as string) from {{ state }}
        where business_date < date'{{ business_date }}'
    {%- endset -%}
    {%- set latest_before = hashcdc._single_value(probe) -%}
    {{ return(latest_before) }}
{% endmacro %}
