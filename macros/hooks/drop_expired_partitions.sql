{% macro drop_expired_partitions(relation, retention_days) %}
    {#- Post-hook: drop the business-date partitions older than `retention_days` days before
        the date being run. Counted from the business date, not the clock, so that a replay
        or a late run keeps what the original run kept. -#}
    {%- if not execute or hashcdc.is_replay() -%}
        {{ return('') }}
    {%- endif -%}
    {%- set oldest_kept = hashcdc.oldest_kept_date(retention_days) -%}
    {%- set probe -%}
        show partitions {{ relation }}
    {%- endset -%}
    {%- for row in run_query(probe).rows -%}
        {%- set partition_date = row[0].split('=')[1] -%}
        {%- if partition_date < oldest_kept -%}
            {%- set drop_partition -%}
                alter table {{ relation }} drop if exists partition (business_date = '{{ partition_date }}')
            {%- endset -%}
            {%- do run_query(drop_partition) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return('') }}
{% endmacro %}


{% macro oldest_kept_date(retention_days) %}
    {#- The oldest business date a retention of `retention_days` days keeps, counted back
        from the date being run (YYYY-MM-DD). -#}
    {{ return((
        modules.datetime.date.fromisoformat(hashcdc.business_date())
        - modules.datetime.timedelta(days=retention_days | int)
    ).isoformat()) }}
{% endmacro %}
