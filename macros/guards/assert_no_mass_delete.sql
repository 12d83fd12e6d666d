{% macro assert_no_mass_delete(counts, table_name, business_date, max_delete_fraction) %}
    {#- A truncated or empty full extract must not wipe a table: the W row's counts, or the
        date's refusal when they delete more than max_delete_fraction of the previous state.
        Spark raises the error while the merge computes its source, before anything is
        committed, so the check costs no pass of its own. -#}
    {%- if not hashcdc._guards_deletes(max_delete_fraction) -%}
        {{ return(counts) }}
    {%- endif -%}
    {%- set message = hashcdc._mass_delete_message(table_name, business_date, max_delete_fraction) -%}
    {%- set deleted = counts ~ "['D']" -%}
    {%- set previous_rows = counts ~ "['state_rows_before']" -%}
    {{ return(
        "if(" ~ hashcdc.deletes_too_many(counts, max_delete_fraction)
        ~ ", raise_error(format_string(" ~ hashcdc._sql_text(message) ~ ", " ~ deleted ~ ", "
        ~ previous_rows ~ ", 100D * " ~ deleted ~ " / " ~ previous_rows ~ ")), " ~ counts ~ ")") }}
{% endmacro %}


{% macro deletes_too_many(counts, max_delete_fraction) %}
    {#- Whether a date's counts (a map with D and state_rows_before) delete more than
        max_delete_fraction of the previous state: the delete guard's rule, for a table
        (assert_no_mass_delete) and a group's member (cdc_state refuses the member). -#}
    {{ return(
        "(" ~ counts ~ "['state_rows_before'] > 0 and " ~ counts ~ "['D'] > "
        ~ counts ~ "['state_rows_before'] * " ~ (max_delete_fraction | float) ~ ")") }}
{% endmacro %}


{% macro _guards_deletes(max_delete_fraction) %}
    {#- Whether the delete guard is on: the fraction is below 1 and the command does not
        allow a mass delete (var hashcdc_allow_mass_delete, --allow-mass-delete). -#}
    {{ return(var('hashcdc_allow_mass_delete', false) | string | lower != 'true'
        and max_delete_fraction | float < 1) }}
{% endmacro %}


{% macro _mass_delete_message(table_name, business_date, max_delete_fraction, member=false) %}
    {#- The refusal's text, a format string of the deleted rows, the previous rows and the
        percentage (`%d`, `%d`, `%.1f`). member: a table group's, refused alone. -#}
    {%- set limit = ((100 * (max_delete_fraction | float)) | round(1)) ~ "%%" -%}
    {%- if member -%}
        {%- set remedy = "Nothing of it was written; its group's other members were. If the "
            ~ "extract is complete, run the date again with `hashcdc run --date "
            ~ business_date ~ " --select " ~ table_name ~ " --allow-mass-delete` (dbt: --vars "
            ~ "'{business_date: " ~ business_date ~ ", hashcdc_allow_mass_delete: true}')." -%}
    {%- else -%}
        {%- set remedy = "Nothing was written. If the extract is complete, re-run the date with "
            ~ "--vars '{business_date: " ~ business_date ~ ", hashcdc_allow_mass_delete: true}'." -%}
    {%- endif -%}
    {{ return("table '" ~ table_name ~ "', business date " ~ business_date
        ~ ": the full extract would delete %d of %d current rows (%.1f%%), more than " ~ limit
        ~ " (max_delete_fraction in tables/" ~ table_name ~ ".yml). " ~ remedy) }}
{% endmacro %}


{% macro refuse_mass_deletes(state, members) %}
    {#- Post-hook of a table group's state (full extracts): the members whose date the
        delete guard refused — cdc_state left their rows and W row out of the commit, and
        gave the MERGE an R row of their counts, which it does not write — are recorded as
        refused with the guard's message, so the history, the tests and the audit after
        the state treat them as the stage's refusals (hashcdc/groups/outcomes.py). One
        query of the date's W rows; the R rows are read again only when one is missing.
        members: the group's members → max_delete_fraction. -#}
    {%- if not hashcdc._runs_a_date() or load_relation(state) is none -%}
        {{ return('') }}
    {%- endif -%}
    {%- set group = config.get('meta', {}).get('hashcdc_table_name') -%}
    {%- set business_date = hashcdc.business_date() -%}
    {%- set guarded = [] -%}
    {%- for name in hashcdc.members_run(group, members) if hashcdc._guards_deletes(members[name]) -%}
        {%- do guarded.append(name) -%}
    {%- endfor -%}
    {%- if not guarded -%}
        {{ return('') }}
    {%- endif -%}
    {%- set applied = run_query(
        "select table_name from " ~ state ~ " where operation = 'W' and business_date = date'"
        ~ business_date ~ "'").columns[0].values() -%}
    {%- set missing = guarded | reject('in', applied) | list -%}
    {%- if not missing -%}
        {{ return('') }}
    {%- endif -%}
    {%- set source = state.incorporate(path={'identifier': state.identifier ~ '__dbt_tmp'})
        .include(database=false, schema=false) -%}
    {%- set refusals = run_query(
        "select table_name, operation_counts['D'] as deleted,"
        ~ " operation_counts['state_rows_before'] as previous_rows from " ~ source
        ~ " where operation = 'R'") -%}
    {%- for row in refusals.rows if row['table_name'] in missing -%}
        {%- set deleted, previous_rows = row['deleted'] | int, row['previous_rows'] | int -%}
        {%- set reason = hashcdc._mass_delete_message(
            row['table_name'], business_date, members[row['table_name']], member=true)
            | format(deleted, previous_rows, 100.0 * deleted / previous_rows) -%}
        {%- do adapter.hashcdc_refuse_member(group, business_date, row['table_name'], reason) -%}
        {%- do log(reason, info=true) -%}
    {%- endfor -%}
    {{ return('') }}
{% endmacro %}
