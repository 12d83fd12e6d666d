{% macro _column_list(columns, relation_alias=none, indent=8) %}
    {#- Quoted column names, optionally qualified with an alias, one per line. -#}
    {%- if columns is string or columns | length == 0 -%}
        {{ exceptions.raise_compiler_error(
            "hashcdc: expected a non-empty list of column names, got " ~ columns) }}
    {%- endif -%}
    {%- set quoted = [] -%}
    {%- for column in columns -%}
        {%- if relation_alias -%}
            {%- do quoted.append(relation_alias ~ '.' ~ adapter.quote(column)) -%}
        {%- else -%}
            {%- do quoted.append(adapter.quote(column)) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(quoted | join(',\n' ~ ' ' * indent)) }}
{% endmacro %}
