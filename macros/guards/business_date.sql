{% macro requested_business_date() %}
    {#- The date given as the var `business_date` (`dbt build --vars`, or `hashcdc run
        --date`), as text, or none. -#}
    {%- set value = var('business_date', none) -%}
    {{ return(none if value is none or value | string in ('', 'None') else value | string) }}
{% endmacro %}


{% macro business_date() %}
    {%- set value = hashcdc.requested_business_date() -%}
    {%- if value is none and not (execute and hashcdc._is_writing_command()) -%}
        {#- parse, compile, docs generate, ls…: render with a placeholder date instead of failing. -#}
        {{ return('1900-01-01') }}
    {%- endif -%}
    {#- The one check of the form, shared with the CLI (hashcdc.dates.parse_business_date). -#}
    {{ return(adapter.hashcdc_business_date(value)) }}
{% endmacro %}


{% macro is_replay() %}
    {#- Whether `hashcdc replay` runs this date (var hashcdc_replay): dates may then be older
        than the latest processed one, and state snapshots are not pruned until its last date. -#}
    {{ return(var('hashcdc_replay', false) | string | lower == 'true') }}
{% endmacro %}


{% macro micro_batch() %}
    {#- The var hashcdc_micro_batch of `hashcdc stream`: false (a whole-date run), true (a
        micro-batch reading the date's files), or the list of the date's files the
        micro-batch reads (those the stream has not read before). -#}
    {%- set value = var('hashcdc_micro_batch', false) -%}
    {%- if value is string or value is none or value is boolean -%}
        {{ return(value | string | lower == 'true') }}
    {%- endif -%}
    {{ return(value | list) }}
{% endmacro %}


{% macro is_micro_batch() %}
    {#- Whether `hashcdc stream` runs this date (micro_batch): the date's events not applied
        yet are applied on top of the state as it is, the date's earlier micro-batches kept
        (no restore); its history waits for the whole-date run that closes the date. -#}
    {%- set value = hashcdc.micro_batch() -%}
    {{ return(value if value is boolean else value | length > 0) }}
{% endmacro %}
