{% macro clear_business_date_partition(relation) %}
    {#- Pre-hook: drop the date's partition before it is rewritten, so that a re-run (or a
        replay) that produces no rows for the date leaves none behind; insert overwrite
        alone only replaces partitions that receive rows. -#}
    {%- if not execute or load_relation(relation) is none -%}
        {{ return('') }}
    {%- endif -%}
    {%- set drop_partition -%}
        alter table {{ relation }} drop if exists partition (business_date = '{{ hashcdc.business_date() }}')
    {%- endset -%}
    {{ return(drop_partition) }}
{% endmacro %}
