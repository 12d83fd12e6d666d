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
    {%- if latest is not none and latest < business_date and applied[-1].is_open -%}
        {#- A date the stream applied has no history until a whole-date run closes it;
            moving past it would leave it without one. -#}
        {{ exceptions.raise_compiler_error(
            "table '" ~ table_name ~ "': business date " ~ latest ~ " was applied by "
            ~ "`hashcdc stream` and is still open (its history, tests and audit are written "
            ~ "when it closes). Nothing was written for " ~ business_date ~ ". Close it "
            ~ "first with `hashcdc run --date " ~ latest ~ " --select " ~ table_name
            ~ "`, then run " ~ business_date ~ ".") }}
    {%- endif -%}
{% endmacro %}
