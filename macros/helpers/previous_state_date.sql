{% macro previous_state_date(state, business_date) %}
    {{ return(adapter.dispatch('previous_state_date', 'hashcdc')(state, business_date)) }}
{% endmacro %}


{% macro default__previous_state_date(state, business_date) %}
    {#- The latest business date before `business_date` with a state snapshot, or none. -#}
    {%- set probe -%}
        select cast(({{ hashcdc._previous_state_date_query(state, business_date) }}) as string)
    {%- endset -%}
    {%- set latest_before = hashcdc._single_value(probe) -%}
    {{ return(latest_before) }}
{% endmacro %}


{% macro _previous_state_date_query(state, business_date) %}
    {#- The query of previous_state_date, to use as a scalar subquery. -#}
    {%- set query -%}
        select max(business_date) from {{ state }}
        where business_date < date'{{ business_date }}'
    {%- endset -%}
    {{ return(query) }}
{% endmacro %}
