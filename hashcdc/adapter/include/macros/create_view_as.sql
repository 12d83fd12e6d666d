{% macro hashcdc__create_view_as(relation, sql) %}
    {#- dbt-spark's view on this adapter (the tables' current and scd2 views, made again
        each date). Spark runs `create or replace view` as a drop and a create, so a reader
        between the two (an analyst's query of `current` while a date runs) finds no view;
        an existing view is altered instead (`alter view … as`: one update of the
        metastore's entry). A view with persisted docs or an enforced contract is made by
        dbt-spark's own `create or replace`, the only form that sets them. -#}
    {%- set existing = adapter.get_relation(
        database=relation.database, schema=relation.schema, identifier=relation.identifier) -%}
    {%- set plain = not config.persist_column_docs()
        and not config.persist_relation_docs()
        and not config.get('contract').enforced -%}
    {%- if existing is not none and existing.is_view and plain -%}
        {{ return('alter view ' ~ relation ~ ' as\n' ~ sql) }}
    {%- endif -%}
    {{ return(spark__create_view_as(relation, sql)) }}
{% endmacro %}
