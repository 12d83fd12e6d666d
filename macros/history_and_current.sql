{% macro history_changes(state, columns, extra_columns=[]) %}
    {{ return(adapter.dispatch('history_changes', 'hashcdc')(state, columns, extra_columns)) }}
{% endmacro %}

{% macro default__history_changes(state, columns, extra_columns) %}
{#- The net changes of the business date: its snapshot's I, U and D rows. extra_columns:
    change feeds also keep the sequence of the last event applied (and copies, without a
    key). -#}
{%- set business_date = hashcdc.business_date() -%}
with

state_snapshot as (
    select * from {{ state }}
    where business_date = date'{{ business_date }}'
),

changes as (
    select
        {{ hashcdc._column_list(columns + extra_columns) }},
        keyhash,
        nonkeyhash,
        operation,
        eff_start_date,
        business_date
    from state_snapshot
    where operation in ('I', 'U', 'D')
)

select * from changes
{% endmacro %}


{% macro current_state(state, columns, counted=false) %}
    {{ return(adapter.dispatch('current_state', 'hashcdc')(state, columns, counted)) }}
{% endmacro %}

{% macro default__current_state(state, columns, counted) %}
{#- The rows of the latest snapshot. counted: a table without a key keeps identical rows
    once with their number of copies; the current table shows each copy as a row. -#}
with

state_snapshots as (
    select * from {{ state }}
),

latest_snapshot as (
    select * from state_snapshots
    where business_date = (select max(business_date) from state_snapshots)
),

current_rows as (
    select
        {{ hashcdc._column_list(columns) }},
        keyhash,
        nonkeyhash,
        operation,
        eff_start_date
    from latest_snapshot
    {%- if counted %}
    lateral view explode(sequence(1, copies)) copy_numbers as copy_number
    {%- endif %}
    where operation in ('I', 'U', 'N', 'X')
)

select * from current_rows
{% endmacro %}


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
    {%- set partitions = run_query("show partitions " ~ state) -%}
    {%- set dates = [] -%}
    {%- for row in partitions.rows -%}
        {%- do dates.append(row[0].split('=')[1]) -%}
    {%- endfor -%}
    {%- for snapshot_date in (dates | sort(reverse=true))[keep | int:] -%}
        {%- do run_query(
            "alter table " ~ state ~ " drop if exists partition (business_date = '"
            ~ snapshot_date ~ "')") -%}
    {%- endfor -%}
    {{ return('') }}
{% endmacro %}


{% macro clear_business_date_partition(relation) %}
    {{ return(adapter.dispatch('clear_business_date_partition', 'hashcdc')(relation)) }}
{% endmacro %}

{% macro default__clear_business_date_partition(relation) %}
    {#- Pre-hook: drop the date's partition before it is rewritten, so that a re-run (or a
        replay) that produces no rows for the date leaves none behind; insert overwrite
        alone only replaces partitions that receive rows. -#}
    {%- if not execute or load_relation(relation) is none -%}
        {{ return('') }}
    {%- endif -%}
    {{ return("alter table " ~ relation ~ " drop if exists partition (business_date = '"
        ~ hashcdc.business_date() ~ "')") }}
{% endmacro %}


{% macro scd2_versions(history, columns, audit=false) %}
    {{ return(adapter.dispatch('scd2_versions', 'hashcdc')(history, columns, audit)) }}
{% endmacro %}

{% macro default__scd2_versions(history, columns, audit) %}
{#- Every version of every key from the history, with explicit validity: a version is
    valid from its business date until the next change of its key. A delete is a version
    of its own (is_deleted), valid until the key is inserted again. audit: the history of
    a change feed holds every event; versions follow the event sequence within a date, and
    an update that moves a row to another key ends the old key's version. -#}
with

changes as (
    select
        {{ hashcdc._column_list(columns) }},
        keyhash,
        nonkeyhash,
        operation,
        business_date,
        {{ "event_sequence" if audit else "cast(null as int) as event_sequence" }}
    from {{ history }}
    {%- if audit %}
    where operation != 'T'
    union all
    select
        {%- for column in columns %}
        null as {{ adapter.quote(column) }},
        {%- endfor %}
        before_keyhash as keyhash,
        null as nonkeyhash,
        'D' as operation,
        business_date,
        event_sequence
    from {{ history }}
    where before_keyhash is not null
    {%- endif %}
),

versions as (
    select
        {{ hashcdc._column_list(columns) }},
        keyhash,
        nonkeyhash,
        operation,
        business_date as valid_from,
        lead(business_date) over (
            partition by keyhash order by business_date, event_sequence
        ) as valid_to
    from changes
),

final as (
    select
        {{ hashcdc._column_list(columns) }},
        keyhash,
        nonkeyhash,
        operation,
        valid_from,
        valid_to,
        valid_to is null and operation != 'D' as is_current,
        operation = 'D' as is_deleted
    from versions
)

select * from final
{% endmacro %}


{% macro changelog_images(state, columns) %}
    {{ return(adapter.dispatch('changelog_images', 'hashcdc')(state, columns)) }}
{% endmacro %}

{% macro default__changelog_images(state, columns) %}
{#- Each change of the business date with its before and after images and the columns
    that differ. The before image of an update comes from the previous snapshot, joined
    on keyhash for the updated keys only; a delete's before image is its D row. -#}
{%- set business_date = hashcdc.business_date() -%}
{%- set previous_date = hashcdc.previous_state_date(state, business_date) -%}
with

changes as (
    select * from {{ state }}
    where business_date = date'{{ business_date }}' and operation in ('I', 'U', 'D')
),

previous_versions as (
    select
        keyhash,
        struct(
            {{ hashcdc._column_list(columns, indent=12) }}
        ) as before_image
    {%- if previous_date is none %}
    from changes
    where false
    {%- else %}
    from {{ state }}
    where business_date = date'{{ previous_date }}' and operation in ('I', 'U', 'N', 'X')
    {%- endif %}
),

images as (
    select
        changes.keyhash,
        changes.operation,
        case
            when changes.operation = 'D' then struct(
                {{ hashcdc._column_list(columns, 'changes', indent=16) }}
            )
            else previous_versions.before_image
        end as before_image,
        if(changes.operation = 'D', null, struct(
            {{ hashcdc._column_list(columns, 'changes', indent=12) }}
        )) as after_image,
        changes.business_date
    from changes
    left join previous_versions
        on changes.operation = 'U' and changes.keyhash = previous_versions.keyhash
),

final as (
    select
        keyhash,
        operation,
        before_image,
        after_image,
        array_compact(array(
            {%- for column in columns %}
            if(before_image.{{ adapter.quote(column) }} <=> after_image.{{ adapter.quote(column) }},
                null, '{{ column }}'){{ "," if not loop.last }}
            {%- endfor %}
        )) as changed_columns,
        business_date
    from images
)

select * from final
{% endmacro %}
