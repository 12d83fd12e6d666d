{% macro _single_value(sql) %}
    {#- The first column of the first row of a query, or none (also at parse time). -#}
    {%- if not execute -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set result = run_query(sql) -%}
    {%- if result is none or result.rows | length == 0 -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return(result.rows[0][0]) }}
{% endmacro %}
