{% macro _with_recorded_additions(shape_changes, table_name, previous_date) %}
{#- shape_changes with the first dates the state table records for columns added to the
    config without `added:` (table properties hashcdc.added.<column>, written by the
    stage when the column first arrived: hashcdc.pipeline.evolution.tables.infer_additions). A date the
    config gives wins. -#}
{%- if not shape_changes or previous_date is none -%}
    {{ return(shape_changes) }}
{%- endif -%}
{%- set state = this.incorporate(path={'identifier': table_name ~ '_state'}) -%}
{%- set prefix = 'hashcdc.added.' -%}
{%- set changed = {} -%}
{%- do changed.update(shape_changes.get('changed', {})) -%}
{%- for row in run_query('show tblproperties ' ~ state) -%}
    {%- set column = row[0][prefix | length:] -%}
    {%- if row[0].startswith(prefix) and column in shape_changes.compared -%}
        {%- set change = {} -%}
        {%- do change.update(changed.get(column, {})) -%}
        {%- if change.get('added') is none -%}
            {%- do change.update({'added': row[1]}) -%}
        {%- endif -%}
        {%- do changed.update({column: change}) -%}
    {%- endif -%}
{%- endfor -%}
{{ return({'compared': shape_changes.compared, 'changed': changed}) }}
{% endmacro %}
