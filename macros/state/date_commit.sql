{% macro prepare_state_commit(state) %}
    {#- Pre-hook of a state model: the date's commit will carry the business date in
        Delta's userMetadata (hashcdc/state/versions.py). A date the state already holds (a
        re-run, or a replay) is first undone: the state is restored to the version of the
        date before it, or emptied when there is none, so the date is applied again to
        the state it was computed from. A micro-batch of the stream (is_micro_batch) keeps
        the date's earlier commits: it applies only the events they did not; so does the
        run that closes a date the stream left open (closes_on_top). -#}
    {%- set micro_batch = hashcdc.is_micro_batch() -%}
    {%- if not execute or not hashcdc._is_writing_command() or load_relation(state) is none -%}
        {{ return(hashcdc._commit_metadata_setting(hashcdc.business_date(), micro_batch=micro_batch)) }}
    {%- endif -%}
    {%- set business_date = hashcdc.business_date() -%}
    {%- set applied = hashcdc.applied_state_versions(state) -%}
    {%- set on_top = micro_batch and applied and applied[-1].business_date == business_date -%}
    {%- set closing = hashcdc.closes_on_top(state, business_date) -%}
    {%- if applied and applied[-1].business_date >= business_date and not on_top and not closing -%}
        {%- set previous = hashcdc.previous_state(state, business_date) -%}
        {%- if previous is not none -%}
            {%- do adapter.hashcdc_restore_state(state, previous.last_version) -%}
        {%- else -%}
            {%- do run_query(hashcdc._commit_metadata_setting(business_date, reset=true)) -%}
            {%- do run_query('delete from ' ~ state) -%}
        {%- endif -%}
    {%- endif -%}
    {{ return(hashcdc._commit_metadata_setting(business_date, micro_batch=micro_batch)) }}
{% endmacro %}


{% macro closes_on_top(state, business_date) %}
    {#- Whether a whole-date run of `business_date` closes a date the stream left open on
        top of its micro-batches, instead of restoring the date before it first: the date
        is the state's latest and open, the run is not a micro-batch or a replay (a
        replay restores: the way to apply corrected files of an open date), and the
        state's columns are those of the date before (a column added since needs the
        restore, which keeps the shape of now). The run computes the whole date against
        the date before's version, so its MERGE leaves the rows the restore and a MERGE
        would, in one commit: readers never see the date before again, and the history
        nets the date's commits (state_changes). -#}
    {%- if not execute or hashcdc.is_micro_batch() or hashcdc.is_replay() -%}
        {{ return(false) }}
    {%- endif -%}
    {%- set applied = hashcdc.applied_state_versions(state) -%}
    {%- if not applied or applied[-1].business_date != business_date or not applied[-1].is_open -%}
        {{ return(false) }}
    {%- endif -%}
    {%- set previous = hashcdc.previous_state(state, business_date) -%}
    {%- if previous is none -%}
        {{ return(true) }}
    {%- endif -%}
    {{ return(adapter.hashcdc_same_shape_at(state, previous.last_version)) }}
{% endmacro %}


{% macro _commit_metadata_setting(business_date, reset=false, micro_batch=false) %}
    {#- The `set` statement that tags the session's next Delta commits with the date. -#}
    {{ return(adapter.hashcdc_commit_metadata_statement(business_date, reset, micro_batch)) }}
{% endmacro %}


{% macro start_date_commit() %}
    {#- Pre-hook of a history model: its commit carries the business date, as a state's. -#}
    {{ return(hashcdc._commit_metadata_setting(hashcdc.business_date())) }}
{% endmacro %}


{% macro end_date_commit() %}
    {#- Post-hook of a state or history model: later commits of the session carry no
        business date. -#}
    {{ return(adapter.hashcdc_commit_metadata_statement(none)) }}
{% endmacro %}


{% macro compact_by_policy(state) %}
    {#- Post-hook of a state or history model, after end_date_commit: OPTIMIZE and VACUUM it
        once var('hashcdc_compact_every_dates') dates were applied since its last
        compaction (hashcdc/state/maintenance.py). Nothing when the var is 0. -#}
    {%- if execute and hashcdc._is_writing_command() -%}
        {%- set done = adapter.hashcdc_compact_if_due(
            state,
            var('hashcdc_compact_every_dates', 0),
            hashcdc.state_dates_kept(),
        ) -%}
        {%- if done -%}
            {{ log(done, info=true) }}
        {%- endif -%}
    {%- endif -%}
    {{ return('') }}
{% endmacro %}


{% macro deletion_vectors_by_size(state) %}
    {#- Post-hook of a state model, after end_date_commit: switch the state's deletion
        vectors on once it holds var('hashcdc_deletion_vectors_from_mib') MiB (a state is
        made without them: on a small one they only cost jobs; hashcdc/state/maintenance.py).
        A negative value never switches them on. -#}
    {%- if execute and hashcdc._is_writing_command() -%}
        {%- set done = adapter.hashcdc_deletion_vectors_by_size(
            state, var('hashcdc_deletion_vectors_from_mib')) -%}
        {%- if done -%}
            {{ log(done, info=true) }}
        {%- endif -%}
    {%- endif -%}
    {{ return('') }}
{% endmacro %}


{% macro state_dates_kept() %}
    {#- var('hashcdc_state_dates_kept'), or the value a project still sets under its earlier
        name (hashcdc_state_snapshots_kept), with a warning that says the new one. -#}
    {%- set earlier = var('hashcdc_state_snapshots_kept', none) -%}
    {%- if earlier is not none -%}
        {%- do exceptions.warn(
            "hashcdc: the dbt var hashcdc_state_snapshots_kept is now hashcdc_state_dates_kept; "
            ~ "its value (" ~ earlier ~ ") is used: rename it in dbt_project.yml") -%}
        {{ return(earlier) }}
    {%- endif -%}
    {{ return(var('hashcdc_state_dates_kept')) }}
{% endmacro %}
