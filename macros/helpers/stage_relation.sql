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

