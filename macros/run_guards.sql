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
    {%- if not hashcdc._is_writing_command() or hashcdc.is_replay() -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set latest = hashcdc._single_value(
        "select cast(max(business_date) as string) from " ~ state) -%}
    {%- if latest is not none and latest > business_date -%}
        {{ exceptions.raise_compiler_error(
            "table '" ~ table_name ~ "': business date " ~ business_date
            ~ " is older than the latest processed date " ~ latest
            ~ "; processing it now would rewrite history out of order. Nothing was written. "
            ~ "Run the dates after " ~ latest ~ " instead, or recompute from this date on "
            ~ "with `hashcdc replay --from " ~ business_date ~ "`.") }}
    {%- endif -%}
{% endmacro %}


{% macro assert_no_mass_delete(state, incoming, table_name, business_date, previous_date, max_delete_fraction) %}
    {{ return(adapter.dispatch('assert_no_mass_delete', 'hashcdc')(
        state, incoming, table_name, business_date, previous_date, max_delete_fraction)) }}
{% endmacro %}

{% macro default__assert_no_mass_delete(state, incoming, table_name, business_date, previous_date, max_delete_fraction) %}
    {#- A truncated or empty full extract must not wipe a table: refuse, before writing, a
        date that would delete more than max_delete_fraction of the previous state. -#}
    {%- if not execute or var('hashcdc_allow_mass_delete', false) | string | lower == 'true'
        or max_delete_fraction | float >= 1 -%}
        {{ return('') }}
    {%- endif -%}
    {%- set counts = run_query(
        "select /*+ shuffle_hash(incoming) */ count(*), count_if(incoming.keyhash is null)"
        ~ " from " ~ state ~ " as previous_state"
        ~ " left join (select keyhash from " ~ incoming ~ " where business_date = date'"
        ~ business_date ~ "') as incoming on previous_state.keyhash = incoming.keyhash"
        ~ " where previous_state.business_date = date'" ~ previous_date ~ "'"
        ~ " and previous_state.operation != 'D'") -%}
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


{% macro assert_hash_version(state, table_name) %}
    {{ return(adapter.dispatch('assert_hash_version', 'hashcdc')(state, table_name)) }}
{% endmacro %}

{% macro default__assert_hash_version(state, table_name) %}
    {#- The state's hashes must come from the algorithm the stage uses now, or every row would
        compare as changed. The generated state model sets the version as a table property. -#}
    {%- if not execute -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set expected = (config.get('tblproperties') or {}).get('hashcdc.hash_version') -%}
    {%- set rows = run_query("show tblproperties " ~ state ~ " ('hashcdc.hash_version')").rows -%}
    {%- set found = rows[0][1] if rows | length > 0 else none -%}
    {%- if expected is not none and found != expected -%}
        {%- set found_text = found if found is not none and found | length < 8 else '1 (no version recorded)' -%}
        {{ exceptions.raise_compiler_error(
            "table '" ~ table_name ~ "': the state " ~ state ~ " holds hashes of hash algorithm "
            ~ "version " ~ found_text ~ ", but this hashcdc computes version " ~ expected
            ~ ", so every row would compare as changed. Nothing was written. Rebuild the state: "
            ~ "drop table " ~ state ~ " and run the latest date again (its full extract becomes "
            ~ "the first load), or use the hashcdc release that wrote it.") }}
    {%- endif -%}
{% endmacro %}


{% macro is_replay() %}
    {#- Whether `hashcdc replay` runs this date (var hashcdc_replay): dates may then be older
        than the latest processed one, and state snapshots are not pruned until its last date. -#}
    {{ return(var('hashcdc_replay', false) | string | lower == 'true') }}
{% endmacro %}
