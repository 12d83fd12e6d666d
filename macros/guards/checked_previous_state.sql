{% macro checked_previous_state(business_date, table_name) %}
    {#- In a state model: refuse an out-of-order date and a state of another hash version,
        then return the previous state (previous_state's dict; none on the first run). -#}
    {%- if not is_incremental() -%}
        {{ return(none) }}
    {%- endif -%}
    {%- do hashcdc.assert_business_date_in_order(this, business_date, table_name) -%}
    {%- do hashcdc.assert_hash_version(this, table_name) -%}
    {{ return(hashcdc.previous_state(this, business_date)) }}
{% endmacro %}
