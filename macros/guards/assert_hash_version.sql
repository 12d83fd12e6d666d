{% macro assert_hash_version(state, table_name) %}
    {#- The state's hashes must come from the algorithm the stage uses now, or every row would
        compare as changed. The generated state model sets the version as a table property. -#}
    {%- if not execute -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set expected = (config.get('tblproperties') or {}).get('hashcdc.hash_version') -%}
    {%- set probe -%}
        show tblproperties {{ state }} ('hashcdc.hash_version')
    {%- endset -%}
    {%- set rows = run_query(probe).rows -%}
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
