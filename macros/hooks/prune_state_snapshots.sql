{% macro prune_state_snapshots(state, keep) %}
    {{ return(adapter.dispatch('prune_state_snapshots', 'hashcdc')(state, keep)) }}
{% endmacro %}


{% macro default__prune_state_snapshots(state, keep) %}
    {#- Drop all but the `keep` most recent dated snapshots of a state table (post-hook). -#}
    {%- if not execute or hashcdc.is_replay() -%}
        {{ return('') }}
    {%- endif -%}
    {%- if keep | int < 2 -%}
        {{ exceptions.raise_compiler_error(
            "hashcdc_state_snapshots_kept must be at least 2 (the latest date's previous "
            ~ "state is needed to re-run it), got " ~ keep) }}
    {%- endif -%}
    {#- The metastore lists partitions without reading any data file. -#}
    {%- set probe -%}
        show partitions {{ state }}
    {%- endset -%}
    {%- set partitions = run_query(probe) -%}
    {%- set dates = [] -%}
    {%- for row in partitions.rows -%}
        {%- do dates.append(row[0].split('=')[1]) -%}
    {%- endfor -%}
    {%- for snapshot_date in (dates | sort(reverse=true))[keep | int:] -%}
        {%- set drop_snapshot -%}
            alter table {{ state }} drop if exists partition (business_date = '{{ snapshot_date }}')
        {%- endset -%}
        {%- do run_query(drop_snapshot) -%}
    {%- endfor -%}
    {{ return('') }}
{% endmacro %}
