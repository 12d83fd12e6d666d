{% macro stage_relation(stage, business_date=none) %}
    {#- The session's view of a stage for a business date (default: the one being run): the
        stage model kept it, or it is computed again from the extract
        (hashcdc/pipeline/session_stage.py). At parse time, and in commands that neither build nor
        test (compile, docs generate), the ref itself. -#}
    {%- if not execute or not hashcdc._is_writing_command() -%}
        {{ return(stage) }}
    {%- endif -%}
    {%- set node = hashcdc._stage_node(stage) -%}
    {{ return(adapter.hashcdc_session_stage(
        stage, node.config.meta.get('hashcdc_table'), business_date or hashcdc.business_date(),
        node.config.get('buckets'))) }}
{% endmacro %}


{% macro stage_counts(stage, business_date=none) %}
    {#- The rows of a stage for a business date (default: the one being run) as its checks
        counted them when the stage model kept it in this invocation: its rows, rejected and
        latest_event_at; none otherwise (the consumer then counts stage_relation). -#}
    {%- if not execute or not hashcdc._is_writing_command() -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return(adapter.hashcdc_stage_counts(stage, business_date or hashcdc.business_date())) }}
{% endmacro %}


{% macro _stage_node(stage) %}
    {#- The graph node of the stage model a relation names. -#}
    {%- for node in graph.nodes.values() -%}
        {%- if node.resource_type == 'model' and node.schema == stage.schema
            and (node.alias or node.name) == stage.identifier -%}
            {{ return(node) }}
        {%- endif -%}
    {%- endfor -%}
    {{ exceptions.raise_compiler_error("hashcdc: no stage model found for " ~ stage) }}
{% endmacro %}



{% macro members_run(group, members) %}
    {#- Of a group's enabled members, those its date runs: a member its stage refused (its
        extract could not be loaded) or the command holds back is left out
        (hashcdc/groups/outcomes.py). Outside a run or test of a date, the members as given. -#}
    {%- if not hashcdc._runs_a_date() -%}
        {{ return(members | list) }}
    {%- endif -%}
    {{ return(adapter.hashcdc_members_run(group, hashcdc.business_date(), members | list)) }}
{% endmacro %}


{% macro _run_members(group, members) %}
    {#- Of a group's members (name -> its setting), those its date runs (members_run),
        with their settings; none for a table's own state. -#}
    {%- if members is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set run = {} -%}
    {%- for name in hashcdc.members_run(group, members) -%}
        {%- do run.update({name: members[name]}) -%}
    {%- endfor -%}
    {{ return(run) }}
{% endmacro %}


{% macro refused_members(group) %}
    {#- The members of a group its stage refused for the date being run, each with why. -#}
    {%- if not hashcdc._runs_a_date() -%}
        {{ return({}) }}
    {%- endif -%}
    {{ return(adapter.hashcdc_refused_members(group, hashcdc.business_date())) }}
{% endmacro %}


{% macro group_members_run(group) %}
    {#- The members of table group `group` the date runs (members_run of its enabled
        members, from its stage's embedded config); none when `group` is no group. -#}
    {%- if not group -%}
        {{ return(none) }}
    {%- endif -%}
    {%- for node in graph.nodes.values() if node.resource_type == 'model' and node.name == 'stg_' ~ group -%}
        {%- set members = node.config.meta.get('hashcdc_table', {}).get('members') -%}
        {%- if members is not none -%}
            {%- set enabled = [] -%}
            {%- for member in members if member.get('enabled', true) -%}
                {%- do enabled.append(member.name) -%}
            {%- endfor -%}
            {{ return(hashcdc.members_run(group, enabled)) }}
        {%- endif -%}
    {%- endfor -%}
    {{ return(none) }}
{% endmacro %}


{% macro _runs_a_date() %}
    {#- Whether a run or test of a requested business date is executing (what a group's
        members run is known then). -#}
    {{ return(execute and hashcdc._is_writing_command()
        and hashcdc.requested_business_date() is not none) }}
{% endmacro %}
