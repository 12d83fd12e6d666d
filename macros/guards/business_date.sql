{% macro requested_business_date() %}
    {#- The date given, as text, or none. A var wins (`dbt build --vars`); else the
        environment's date (`hashcdc run`), read at run time so that a new date does not
        make dbt parse the project again. -#}
    {%- set value = var('business_date', none) -%}
    {%- if value is none or value | string in ('', 'None') -%}
        {%- set value = adapter.business_date_from_environment() -%}
    {%- endif -%}
    {{ return(none if value is none or value | string in ('', 'None') else value | string) }}
{% endmacro %}


{% macro business_date() %}
    {%- set value = hashcdc.requested_business_date() -%}
    {%- if value is none -%}
        {#- compile, docs generate, ls…: render with a placeholder date instead of failing. -#}
        {%- if execute and hashcdc._is_writing_command() -%}
            {{ exceptions.raise_compiler_error(
                "business_date is not set: run `hashcdc run --date YYYY-MM-DD`, "
                ~ "`dbt build --vars '{business_date: YYYY-MM-DD}'` or "
                ~ "`HASHCDC_BUSINESS_DATE=YYYY-MM-DD dbt build`") }}
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


{% macro is_replay() %}
    {#- Whether `hashcdc replay` runs this date (var hashcdc_replay): dates may then be older
        than the latest processed one, and state snapshots are not pruned until its last date. -#}
    {{ return(var('hashcdc_replay', false) | string | lower == 'true') }}
{% endmacro %}


{% macro set_business_date_conf() %}
    {#- The pre-hook of the Python models: they read the date from this session setting
        (hashcdc.dates.BUSINESS_DATE_CONF), since their config is fixed when dbt parses. -#}
    {{ return('set hashcdc.business_date = ' ~ hashcdc.business_date()) }}
{% endmacro %}
