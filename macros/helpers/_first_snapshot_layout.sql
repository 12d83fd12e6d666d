{% macro _first_snapshot_layout(previous_date) %}
    {#- A hint for a state's final select: on its first date, one task (one file) per bucket. -#}
    {%- set buckets = config.get('buckets') -%}
    {%- if previous_date is none and buckets -%}
        {{- '/*+ REPARTITION(' ~ (buckets | int) ~ ', keyhash) */' -}}
    {%- endif -%}
{% endmacro %}
