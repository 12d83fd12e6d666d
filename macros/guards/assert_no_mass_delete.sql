{% macro assert_no_mass_delete(counts, table_name, business_date, max_delete_fraction) %}
    {#- A truncated or empty full extract must not wipe a table: the W row's counts, or the
        date's refusal when they delete more than max_delete_fraction of the previous state.
        Spark raises the error while the merge computes its source, before anything is
        committed, so the check costs no pass of its own. -#}
    {%- if var('hashcdc_allow_mass_delete', false) | string | lower == 'true'
        or max_delete_fraction | float >= 1 -%}
        {{ return(counts) }}
    {%- endif -%}
    {%- set fraction = max_delete_fraction | float -%}
    {%- set message = "table '" ~ table_name ~ "', business date " ~ business_date
        ~ ": the full extract would delete %d of %d current rows (%.1f%%), more than "
        ~ ((100 * fraction) | round(1)) ~ "%% (max_delete_fraction in tables/" ~ table_name
        ~ ".yml). Nothing was written. If the extract is complete, re-run the date with "
        ~ "--vars '{business_date: " ~ business_date ~ ", hashcdc_allow_mass_delete: true}'." -%}
    {%- set deleted = counts ~ "['D']" -%}
    {%- set previous_rows = counts ~ "['state_rows_before']" -%}
    {{ return(
        "if(" ~ previous_rows ~ " > 0 and " ~ deleted ~ " > " ~ previous_rows ~ " * " ~ fraction
        ~ ", raise_error(format_string(" ~ hashcdc._sql_text(message) ~ ", " ~ deleted ~ ", "
        ~ previous_rows ~ ", 100D * " ~ deleted ~ " / " ~ previous_rows ~ ")), " ~ counts ~ ")") }}
{% endmacro %}
