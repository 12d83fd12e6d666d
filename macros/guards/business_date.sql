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


{% macro date_command() %}
    {#- What the command asks of the date: a dict of `business_date`, `replay` (var
        hashcdc_replay: `hashcdc replay`), `micro_batch` (var hashcdc_micro_batch: a
        micro-batch of `hashcdc stream`) and `files` (the micro-batch's files when the var
        lists them, else none). The one reader of these vars; what follows from them is
        the date's plan (date_plan). -#}
    {%- set batch = var('hashcdc_micro_batch', false) -%}
    {%- set listed = not (batch is string or batch is none or batch is boolean) -%}
    {{ return({
        'business_date': hashcdc.business_date(),
        'replay': var('hashcdc_replay', false) | string | lower == 'true',
        'micro_batch': (batch | list | length > 0) if listed else (batch | string | lower == 'true'),
        'files': (batch | list) if listed else none,
    }) }}
{% endmacro %}


{% macro date_plan(state, table_name='') %}
    {#- The table-date's plan (hashcdc/state/plan.py, through the adapter): its `mode`
        (daily, rerun, replay, micro_batch, close), `previous` (what the diff compares
        with), `before` (the date before's version), `restores` / `empties` (what a rerun
        undoes first), `micro_batch`, `closes` and `refusal`. Decided once, in Python, from
        the command (date_command) and the state's log (none at parse time: no log). -#}
    {{ return(adapter.hashcdc_date_plan(state if execute else none, hashcdc.date_command(), table_name)) }}
{% endmacro %}
