{% macro delete_expired_dates(relation, retention_days) %}
    {#- Post-hook of a table of dated rows (a history, changelog or rejects): delete the
        dates older than `retention_days` days before the date being run, in one commit (a
        partition's files are dropped, none rewritten). A table group's: `retention_days`
        maps its members to theirs (a partition's files that hold a member still kept are
        rewritten without the expired member's rows). Counted from the business date, not
        the clock, so that a replay or a late run keeps what the original run kept; the
        files go with the VACUUM of compact_by_policy. -#}
    {%- if not execute or hashcdc.date_command().replay -%}
        {{ return('') }}
    {%- endif -%}
    {%- if retention_days is not mapping -%}
        {{ return("delete from " ~ relation ~ " where business_date < date'"
            ~ hashcdc.oldest_kept_date(retention_days) ~ "'") }}
    {%- endif -%}
    {#- A table group's: each member's dates by its own retention (a member without one
        keeps its dates), in the same one commit. -#}
    {%- set expired = [] -%}
    {%- for member, days in retention_days | dictsort -%}
        {%- do expired.append("(table_name = '" ~ member ~ "' and business_date < date'"
            ~ hashcdc.oldest_kept_date(days) ~ "')") -%}
    {%- endfor -%}
    {{ return("delete from " ~ relation ~ " where " ~ expired | join(' or ')) }}
{% endmacro %}


{% macro oldest_kept_date(retention_days) %}
    {#- The oldest business date a retention of `retention_days` days keeps, counted back
        from the date being run (YYYY-MM-DD). -#}
    {{ return((
        modules.datetime.date.fromisoformat(hashcdc.business_date())
        - modules.datetime.timedelta(days=retention_days | int)
    ).isoformat()) }}
{% endmacro %}
