{% macro hashcdc__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates) %}
    {#- dbt-spark's `merge` strategy on this adapter: merge_state for the state models
        (config hashcdc_state=true), replace_date for the tables of dated rows (histories,
        changelogs, rejects: config hashcdc_dated=true), dbt-spark's own for any other
        merge model. An override of a dbt macro lives with
        the adapter: dbt dispatches to an adapter's own macros in every project, to a
        package's only where a `dispatch:` setting names it. -#}
    {%- if config.get('hashcdc_state') -%}
        {{ return(hashcdc.merge_state(target, source)) }}
    {%- endif -%}
    {%- if config.get('hashcdc_dated') -%}
        {{ return(hashcdc.replace_date(target, source)) }}
    {%- endif -%}
    {{ return(spark__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates)) }}
{% endmacro %}
