{% macro business_date() %}
    {{ return(adapter.dispatch('business_date', 'hashcdc')()) }}
{% endmacro %}

{% macro default__business_date() %}
    {%- set value = var('business_date', none) -%}
    {%- if value is none or value | string in ('', 'None') -%}
        {#- compile, docs generate, ls…: render with a placeholder date instead of failing. -#}
        {%- if execute and hashcdc._is_writing_command() -%}
            {{ exceptions.raise_compiler_error(
                "business_date is not set: run `hashcdc run --date YYYY-MM-DD` or "
                ~ "`dbt build --vars '{business_date: YYYY-MM-DD}'`") }}
        {%- endif -%}
        {{ return('1900-01-01') }}
    {%- endif -%}
    {%- set text = value | string -%}
    {%- if not modules.re.match('^\\d{4}-\\d{2}-\\d{2}$', text) -%}
        {{ exceptions.raise_compiler_error(
            "business_date '" ~ text ~ "' is not a date in YYYY-MM-DD form") }}
    {%- endif -%}
    {{ return(text) }}
{% endmacro %}


{% macro _is_writing_command() %}
    {#- Whether this dbt command builds models or runs tests (and so needs a real date). -#}
    {{ return(flags.WHICH in ('run', 'build', 'test', 'retry')) }}
{% endmacro %}


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


{% macro previous_state_date(state, business_date) %}
    {{ return(adapter.dispatch('previous_state_date', 'hashcdc')(state, business_date)) }}
{% endmacro %}

{% macro default__previous_state_date(state, business_date) %}
    {#- The latest business date before `business_date` with a state snapshot, or none. -#}
    {%- set latest_before = hashcdc._single_value(
        "select cast(max(business_date) as string) from " ~ state
        ~ " where business_date < date'" ~ business_date ~ "'") -%}
    {{ return(latest_before) }}
{% endmacro %}


{% macro assert_business_date_in_order(state, business_date, table_name) %}
    {{ return(adapter.dispatch('assert_business_date_in_order', 'hashcdc')(state, business_date, table_name)) }}
{% endmacro %}

{% macro default__assert_business_date_in_order(state, business_date, table_name) %}
    {%- if not hashcdc._is_writing_command() -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set latest = hashcdc._single_value(
        "select cast(max(business_date) as string) from " ~ state) -%}
    {%- if latest is not none and latest > business_date -%}
        {{ exceptions.raise_compiler_error(
            "table '" ~ table_name ~ "': business date " ~ business_date
            ~ " is older than the latest processed date " ~ latest
            ~ "; processing it now would rewrite history out of order. Nothing was written. "
            ~ "Run the dates after " ~ latest ~ " instead; recomputing past dates (replay) "
            ~ "is not available yet.") }}
    {%- endif -%}
{% endmacro %}
