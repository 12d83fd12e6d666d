{% macro applied_state_version(state, business_date) %}
    {#- The state's version that applied `business_date` (a dict of `version`,
        `business_date`, `last_version`, `is_open`, `first_version`), or none when the
        state does not hold that date. -#}
    {%- set found = [] -%}
    {%- for applied in hashcdc.applied_state_versions(state) -%}
        {%- if applied.business_date == business_date -%}
            {%- do found.append(applied) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(found[-1] if found else none) }}
{% endmacro %}


{% macro applied_state_versions(state) %}
    {#- The business dates a state table holds, in order, each with the Delta version that
        applied it (from the table's log: hashcdc/state/versions.py); empty before the first run
        and at parse time. -#}
    {%- if not execute or state is none -%}
        {{ return([]) }}
    {%- endif -%}
    {{ return(adapter.hashcdc_applied_versions(state)) }}
{% endmacro %}
