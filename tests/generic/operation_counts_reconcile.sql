{% test operation_counts_reconcile(model, incoming, extract_type, members=none) %}
{#-
    For the business date being run (or the latest one when none is given), the
    operation counts the date's diff recorded (the W row of the state's commit for the
    date) must reconcile with its inputs and with the state that commit left:
      loaded incoming rows           = I + U + N
      previous state rows            = U + N + D + X
      new state rows (I + U + N + X) = previous state rows + I - D   (counted in the state)
    a delta extract never tags D, and a full extract tags X only for keys whose row was
    rejected (kept as they were): X <= rejected rows. The rows the date wrote have one
    row per key and no null keyhash (the merge adds a key only where it has none). For a
    change feed (extract_type changes) the rows touched are at most the events loaded
    (I + U + N <= loaded events, instead of the first rule). The state has exactly one W
    row, and every other row an operation the current table shows (I, U, N, X) or a
    feed's applied-event row (A): a row of another operation would vanish from `current`.
    Fails with one row per broken rule. members (a table group's state): the rules hold
    for each member run, from the same one pass; a failing row names its table.
-#}
{%- set applied_versions = hashcdc.applied_state_versions(model) -%}
{%- if hashcdc.requested_business_date() is none -%}
    {%- set business_date = applied_versions[-1].business_date if applied_versions else '1900-01-01' -%}
{%- else -%}
    {%- set business_date = hashcdc.business_date() -%}
{%- endif -%}
{%- set applied = hashcdc.applied_state_version(model, business_date) -%}
{%- if members is not none and hashcdc._runs_a_date() -%}
    {%- set group = hashcdc._stage_node(incoming).config.meta.get('hashcdc_table_name') -%}
    {%- set members = hashcdc.members_run(group, members) -%}
{%- endif -%}
{%- set counted = hashcdc.stage_counts(incoming, business_date) -%}
{%- set incoming = hashcdc.stage_relation(incoming, business_date) -%}
{%- set member = 'table_name' if members is not none else none -%}
with

state_rows as (
    {#- The state as the date's commit left it (nothing when it does not hold the date). #}
    select {{ member ~ ',' if member }} operation, keyhash, business_date, operation_counts
    from {{ model }}
    {%- if applied is none %}
    where false
    {%- else %}
    version as of {{ applied.version }}
    {%- endif %}
    {%- if member %}
    {{ 'and' if applied is none else 'where' }} table_name in ('{{ members | join("', '") }}')
    {%- endif %}
),

incoming_rows as (
    {%- if member %}
    select
        members.table_name,
        count_if(incoming._row_errors is null and incoming.keyhash is not null) as row_count,
        count_if(incoming._row_errors is not null) as rejected_count
    from (values ('{{ members | join("'), ('") }}')) as members (table_name)
    left join {{ incoming }} as incoming
        on
            incoming.table_name = members.table_name
            and incoming.business_date = date'{{ business_date }}'
    group by members.table_name
    {%- elif counted is not none %}
    {#- As the stage's checks counted the stage this invocation kept (no second scan). #}
    select
        {{ counted.rows - counted.rejected }}L as row_count,
        {{ counted.rejected }}L as rejected_count
    {%- else %}
    select
        count_if(_row_errors is null) as row_count,
        count_if(_row_errors is not null) as rejected_count
    from {{ incoming }}
    where business_date = date'{{ business_date }}'
    {%- endif %}
),

operation_counts as (
    {#- In one pass over the state: the counts the date's diff recorded in the W row, the
        state itself after the commit, and the keys the date wrote. #}
    select
        {{ member ~ ',' if member }}
        count_if(operation = 'W') as watermark_rows,
        {%- for name, key in [('inserted', 'I'), ('updated', 'U'), ('unchanged', 'N'),
                              ('deleted', 'D'), ('not_supplied', 'X'),
                              ('previous_state_rows', 'state_rows_before')] %}
        coalesce(max(if(operation = 'W', operation_counts['{{ key }}'], null)), 0) as {{ name }},
        {%- endfor %}
        count_if(operation in ('I', 'U', 'N', 'X')) as new_state_rows,
        count_if(operation in ('I', 'U', 'N', 'X') and keyhash is null) as null_keys,
        count_if(operation is null or operation not in ('I', 'U', 'N', 'X', 'W', 'A', 'P'))
            as unknown_operations,
        count_if(business_date = date'{{ business_date }}' and operation in ('I', 'U', 'N', 'X'))
            as written_rows,
        count(distinct if(
            business_date = date'{{ business_date }}' and operation in ('I', 'U', 'N', 'X'),
            keyhash, null)) as written_keys
    from state_rows
    {%- if member %}
    group by {{ member }}
    {%- endif %}
),

rules as (
    {#- One row per rule, from the one row of counts (no scan per rule). #}
    select
        {{ 'incoming_rows.' ~ member ~ ',' if member }}
        inline(array(
        {%- if extract_type == 'changes' %}
        named_struct(
            'rule', 'I + U + N <= loaded events',
            'expected', least(inserted + updated + unchanged, row_count),
            'actual', inserted + updated + unchanged
        ),
        {%- else %}
        named_struct(
            'rule', 'loaded incoming rows = I + U + N',
            'expected', row_count,
            'actual', inserted + updated + unchanged
        ),
        {%- endif %}
        named_struct(
            'rule', 'one W row (the counts of the date)',
            'expected', 1L,
            'actual', watermark_rows
        ),
        named_struct(
            'rule', 'previous state rows = U + N + D + X',
            'expected', previous_state_rows,
            'actual', updated + unchanged + deleted + not_supplied
        ),
        named_struct(
            'rule', 'one row per keyhash among the rows the date wrote',
            'expected', written_rows,
            'actual', written_keys
        ),
        named_struct(
            'rule', 'no null keyhash in the new state',
            'expected', 0L,
            'actual', null_keys
        ),
        named_struct(
            'rule', 'every state row is I, U, N, X, W, A or P',
            'expected', 0L,
            'actual', unknown_operations
        ),
        {%- if extract_type == 'full' %}
        named_struct(
            'rule', 'X rows <= rejected rows in a full extract',
            'expected', least(not_supplied, rejected_count),
            'actual', not_supplied
        ),
        {%- elif extract_type == 'delta' %}
        named_struct(
            'rule', 'no D rows in a delta extract',
            'expected', 0L,
            'actual', deleted
        ),
        {%- endif %}
        named_struct(
            'rule', 'new state rows = previous state rows + I - D',
            'expected', previous_state_rows + inserted - deleted,
            'actual', new_state_rows
        )
    ))
    {%- if member %}
    from incoming_rows
    left join operation_counts
        on incoming_rows.{{ member }} = operation_counts.{{ member }}
    {%- else %}
    from operation_counts cross join incoming_rows
    {%- endif %}
),

broken_rules as (
    select
        {{ member ~ ',' if member }}
        '{{ business_date }}' as business_date,
        rule,
        expected,
        actual
    from rules
    where not expected <=> actual
)

select * from broken_rules
{% endtest %}
