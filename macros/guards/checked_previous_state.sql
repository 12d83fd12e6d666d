{% macro checked_previous_state(business_date, table_name) %}
    {#- In a state model: refuse what the date's plan refuses (a date out of order, or one
        after a date the stream left open) and a state of another hash version, then
        return what the diff compares with (the plan's `previous`: a dict of
        `business_date`, `version` and `last_version`, where `last_version` none is the
        table as it is when the query runs — after a rerun's restore, or on top of a
        micro-batch's earlier commits); none on the first run. -#}
    {%- if not is_incremental() -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set plan = hashcdc.date_plan(this, table_name) -%}
    {%- if plan.business_date != business_date -%}
        {{ exceptions.raise_compiler_error(
            "checked_previous_state: the plan is of " ~ plan.business_date ~ ", not " ~ business_date) }}
    {%- endif -%}
    {%- if plan.refusal and hashcdc._is_writing_command() -%}
        {{ exceptions.raise_compiler_error(plan.refusal) }}
    {%- endif -%}
    {%- do hashcdc.assert_hash_version(this, table_name) -%}
    {{ return(plan.previous) }}
{% endmacro %}
