{% macro checked_previous_state_date(business_date, table_name) %}
    {#- In a state model: refuse an out-of-order date and a state of another hash version,
        then return the previous snapshot's date (none on the first run). -#}
    {%- if not is_incremental() -%}
        {{ return(none) }}
    {%- endif -%}
    {%- do hashcdc.assert_business_date_in_order(this, business_date, table_name) -%}
    {%- do hashcdc.assert_hash_version(this, table_name) -%}
    {{ return(hashcdc.previous_state_date(this, business_date)) }}
{% endmacro %}
