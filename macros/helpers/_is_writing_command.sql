{% macro _is_writing_command() %}
    {#- Whether this dbt command builds models or runs tests (and so needs a real date). -#}
    {{ return(flags.WHICH in ('run', 'build', 'test', 'retry')) }}
{% endmacro %}
