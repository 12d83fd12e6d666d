{% macro assert_no_mass_delete(state, incoming, table_name, business_date, previous, max_delete_fraction) %}
    {{ return(adapter.dispatch('assert_no_mass_delete', 'hashcdc')(
        state, incoming, table_name, business_date, previous, max_delete_fraction)) }}
{% endmacro %}


{% macro default__assert_no_mass_delete(state, incoming, table_name, business_date, previous, max_delete_fraction) %}
    {#- A truncated or empty full extract must not wipe a table: refuse, before writing, a
        date that would delete more than max_delete_fraction of the previous state. -#}
    {%- if not execute or var('hashcdc_allow_mass_delete', false) | string | lower == 'true'
        or max_delete_fraction | float >= 1 -%}
        {{ return('') }}
    {%- endif -%}
    {%- set probe -%}
        select /*+ shuffle_hash(incoming) */
            count(*),
            count_if(incoming.keyhash is null)
        from {{ state }} version as of {{ previous.last_version }} as previous_state
        left join (
            select keyhash from {{ incoming }}
            where business_date = date'{{ business_date }}'
        ) as incoming
            on previous_state.keyhash = incoming.keyhash
        where previous_state.operation in ('I', 'U', 'N', 'X')
    {%- endset -%}
    {%- set counts = run_query(probe) -%}
    {%- set previous_rows = counts.rows[0][0] | int -%}
    {%- set deleted_rows = counts.rows[0][1] | int -%}
    {%- if previous_rows > 0 and deleted_rows > previous_rows * (max_delete_fraction | float) -%}
        {{ exceptions.raise_compiler_error(
            "table '" ~ table_name ~ "', business date " ~ business_date ~ ": the full extract "
            ~ "would delete " ~ deleted_rows ~ " of " ~ previous_rows ~ " current rows ("
            ~ ((100.0 * deleted_rows / previous_rows) | round(1)) ~ "%), more than "
            ~ ((100 * max_delete_fraction | float) | round(1)) ~ "% (max_delete_fraction in "
            ~ "tables/" ~ table_name ~ ".yml). Nothing was written. If the extract is complete, "
            ~ "re-run the date with --vars '{business_date: " ~ business_date
            ~ ", hashcdc_allow_mass_delete: true}'.") }}
    {%- endif -%}
    {{ return('') }}
{% endmacro %}
