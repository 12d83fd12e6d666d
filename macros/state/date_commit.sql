{% macro prepare_state_commit(state) %}
    {#- Pre-hook of a state model: the date's commit will carry the business date in
        Delta's userMetadata (hashcdc/state/versions.py). What the date's plan undoes
        first is undone here: a rerun or a replay restores the version of the date before
        it, or empties the table when there is none (date_plan: `restores`, `empties`);
        a micro-batch and the run that closes an open date keep the date's commits. A
        table group's: each member the date runs by its own plan, its rows only, and the
        commit names the members it applies. -#}
    {%- set plan = hashcdc.date_plan(state) -%}
    {%- set members = hashcdc.group_members_run(config.get('meta', {}).get('hashcdc_table_name'))
        if config.get('hashcdc_group') else none -%}
    {%- if execute and hashcdc._is_writing_command() and load_relation(state) is not none -%}
        {%- if members is not none -%}
            {#- Never a RESTORE, which would undo a sibling's date (one refused, held, or
                not selected), and never a reset: the log keeps every date it held. -#}
            {%- set undone = adapter.hashcdc_restore_members(state, hashcdc.date_command(), members) -%}
            {%- if undone -%}
                {{ log(undone, info=true) }}
            {%- endif -%}
        {%- elif plan.restores is not none -%}
            {%- do adapter.hashcdc_restore_state(state, plan.restores) -%}
        {%- elif plan.empties -%}
            {%- do run_query(hashcdc._commit_metadata_setting(plan.business_date, reset=true)) -%}
            {%- do run_query('delete from ' ~ state) -%}
        {%- endif -%}
    {%- endif -%}
    {{ return(hashcdc._commit_metadata_setting(
        plan.business_date, micro_batch=plan.micro_batch, members=members)) }}
{% endmacro %}


{% macro _commit_metadata_setting(business_date, reset=false, micro_batch=false, members=none) %}
    {#- The `set` statement that tags the session's next Delta commits with the date (and,
        a table group's, the members whose date they apply). -#}
    {{ return(adapter.hashcdc_commit_metadata_statement(business_date, reset, micro_batch, members)) }}
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
        A negative value never switches them on. Not at a stream's micro-batch: its size is
        looked at when its date is closed (a look is a job, a batch is seconds). -#}
    {%- if execute and hashcdc._is_writing_command() and not hashcdc.date_command().micro_batch -%}
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
