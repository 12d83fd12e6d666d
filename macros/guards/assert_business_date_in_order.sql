{% macro assert_business_date_in_order(state, business_date, table_name) %}
    {%- if not hashcdc._is_writing_command() or hashcdc.is_replay() -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set applied = hashcdc.applied_state_versions(state) -%}
    {%- set latest = applied[-1].business_date if applied else none -%}
    {%- if latest is not none and latest > business_date -%}
        {{ exceptions.raise_compiler_error(
            "table '" ~ table_name ~ "': business date " ~ business_date
            ~ " is older than the latest processed date " ~ latest
            ~ "; processing it now would rewrite history out of order. Nothing was written. "
            ~ "Run the dates after " ~ latest ~ " instead, or recompute from this date on "
            ~ "with `hashcdc replay --from " ~ business_date ~ "`.") }}
    {%- endif -%}
{% endmacro %}
