{% macro incoming_rows(source) %}
    {#- The relation an incremental model's new rows are read from: a Python model's are a
        temporary view of the session (the adapter's py_write_table), named without a schema. -#}
    {{ return(source.include(database=false, schema=false) if model['language'] == 'python' else source) }}
{% endmacro %}
