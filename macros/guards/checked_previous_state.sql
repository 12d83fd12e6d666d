{% macro checked_previous_state(business_date, table_name) %}
    {#- In a state model: refuse an out-of-order date and a state of another hash version,
        then return the previous state (previous_state's dict; none on the first run).
        When the state already holds the date (a rerun, a replay), the pre-hook restores
        it to the previous date before the model's query runs (prepare_state_commit),
        keeping the columns and types of now: the query then reads the table as the
        restore leaves it (`last_version` none), since the previous date's own version
        may lack a column added or widened later. A micro-batch of the stream reads the
        table as it is too: the date's earlier micro-batches stay (no restore). The run
        that closes an open date on top of them (closes_on_top) reads the date before at
        its own version. -#}
    {%- if not is_incremental() -%}
        {{ return(none) }}
    {%- endif -%}
    {%- do hashcdc.assert_business_date_in_order(this, business_date, table_name) -%}
    {%- do hashcdc.assert_hash_version(this, table_name) -%}
    {%- set applied = hashcdc.applied_state_versions(this) -%}
    {%- set earlier = [] -%}
    {%- for version in applied if version.business_date < business_date -%}
        {%- do earlier.append(version) -%}
    {%- endfor -%}
    {%- set previous = earlier[-1] if earlier else none -%}
    {%- if previous is none and applied and hashcdc.is_micro_batch() -%}
        {#- A micro-batch of the first date, on top of its earlier ones: no date before,
            the table as it is. -#}
        {{ return({'business_date': none, 'version': none, 'last_version': none}) }}
    {%- endif -%}
    {%- if previous is none or applied[-1].business_date < business_date
          or hashcdc.closes_on_top(this, business_date) -%}
        {{ return(previous) }}
    {%- endif -%}
    {%- set restored = {} -%}
    {%- do restored.update(previous) -%}
    {%- do restored.update({'last_version': none}) -%}
    {{ return(restored) }}
{% endmacro %}
