{% macro delete_expired_dates(relation, retention_days) %}
    {#- Post-hook of a Delta history: delete the dates older than `retention_days` days
        before the date being run, in one commit (a partition's files are dropped, none
        rewritten). Counted from the business date, as drop_expired_partitions; the
        files go with the VACUUM of compact_by_policy. -#}
    {%- if not execute or hashcdc.is_replay() -%}
        {{ return('') }}
    {%- endif -%}
    {%- set oldest_kept = hashcdc.oldest_kept_date(retention_days) -%}
    {{ return("delete from " ~ relation ~ " where business_date < date'" ~ oldest_kept ~ "'") }}
{% endmacro %}
