{% macro cdc_state(incoming, table_name, extract_type, columns, max_delete_fraction=0.5, hash_column='nonkeyhash', shape_changes={}, members=none, member_shapes={}) %}
{%- if extract_type not in ('full', 'delta') -%}
    {{ exceptions.raise_compiler_error(
        "cdc_state: extract_type must be 'full' or 'delta' (change feeds use cdc_feed_state), got '"
        ~ extract_type ~ "'") }}
{%- endif -%}
{#- The rows a business date writes to the state (merged by hashcdc.merge_state): I and U
    rows with their new payload, D rows (deleted keys), in a full extract X rows (keys
    whose row was rejected, kept as they were), in a delta the N rows it supplied (their
    seen_date moves), rows whose hashes differ only by the table's shape (N, new hash),
    and the W row: the date, and its operation counts. Unchanged keys are not written.
    members: a table group's state (`table_name` the group): its members run, each with its
    max_delete_fraction; a row is a member's (`table_name`), keys match within a member,
    each member has its own W row and delete guard, and a member not run (paused, refused
    by its checks, held by the command: members_run) is not read. A member whose date the
    guard refuses writes nothing: its rows are left out and its W row is an R row, which
    merge_state does not write (the state's post-hook, refuse_mass_deletes, reads it). -#}
{%- set business_date = hashcdc.business_date() -%}
{%- set members = hashcdc._run_members(table_name, members) -%}
{%- set previous = hashcdc.checked_previous_state(business_date, table_name) -%}
{%- set incoming = hashcdc.stage_relation(incoming) -%}
{%- set previous_date = previous.business_date if previous else none -%}
{%- set shape_changes = hashcdc._with_recorded_additions(shape_changes, table_name, previous_date) -%}
{#- A group's: each member's own, as its config says them (member_shapes) with the
    columns added to it since (hashcdc/groups/evolution.py). -#}
{%- set member_changes = adapter.hashcdc_member_shape_changes(this, members | list, member_shapes)
    if members is not none and previous_date is not none and execute else {} -%}
{%- set missing_operation = 'D' if extract_type == 'full' else 'X' -%}
{%- set member = 'table_name' if members is not none else none -%}
with

incoming as (
    select
        {{ hashcdc._column_list(([member] if member else []) + columns) }},
        keyhash,
        {{ hash_column }} as nonkeyhash
    from {{ incoming }}
    where business_date = date'{{ business_date }}' and _row_errors is null
        {{- hashcdc._of_members(members) }}
),
{%- if extract_type == 'full' %}

rejected_keys as (
    {#- Keys whose row was rejected are kept as they were (X), not deleted. #}
    select distinct {{ member ~ ',' if member }} keyhash
    from {{ incoming }}
    where business_date = date'{{ business_date }}' and _row_errors is not null
        {{- hashcdc._of_members(members) }}
),
{%- endif %}

previous_state as (
    {#- Only the columns the comparison uses are read: the hashes, the dates, and the
        payload only when the table's shape changed (only_shape_differs). #}
    {{- hashcdc._previous_state_rows(
        this, previous, 'incoming', ([member] if member else []) + columns + ['keyhash', 'nonkeyhash'],
        typed_extras={
            'operation': 'string', 'eff_start_date': 'date', 'seen_date': 'date',
            'business_date': 'date'},
        members=members) }}
),

{%- if extract_type == 'delta' %}

supplied_previous_state as (
    {#- A delta changes only the keys it supplies: the state is scanned for those (the
        delta's keys are broadcast when small), not shuffled whole; the keys it does not
        supply (X) are counted from the previous W row. #}
    select previous_state.*
    from previous_state
    left semi join incoming
        on previous_state.keyhash = incoming.keyhash
        {{- hashcdc._same_member(member, 'previous_state', 'incoming') }}
),

previous_counts as (
    {{- hashcdc._previous_state_rows(
        this, previous, 'incoming', [member] if member else [],
        typed_extras={'operation_counts': 'map<string, bigint>'},
        operations=['W'], members=members) }}
),
{%- endif %}

compared as (
    select {{ "/*+ broadcast(rejected_keys) */" if extract_type == 'full' }}
        {%- if member %}
        coalesce(incoming.{{ member }}, previous_state.{{ member }}) as {{ member }},
        {%- endif %}
        incoming.keyhash as incoming_keyhash,
        incoming.nonkeyhash as incoming_nonkeyhash,
        previous_state.keyhash as previous_keyhash,
        previous_state.nonkeyhash as previous_nonkeyhash,
        previous_state.eff_start_date as previous_eff_start_date,
        {{ hashcdc._previous_seen_date(extract_type, previous_date) }} as previous_seen_date,
        {%- if extract_type == 'full' %}
        rejected_keys.keyhash is not null as is_rejected_key,
        {%- else %}
        false as is_rejected_key,
        {%- endif %}
        struct(
            {{ hashcdc._column_list(columns, 'incoming', indent=12) }}
        ) as incoming_row,
        struct(
            {{ hashcdc._column_list(columns, 'previous_state', indent=12) }}
        ) as previous_row
    from incoming
    {%- if extract_type == 'delta' %}
    full outer join supplied_previous_state as previous_state
    {%- else %}
    full outer join previous_state
    {%- endif %}
        on incoming.keyhash = previous_state.keyhash
        {{- hashcdc._same_member(member, 'incoming', 'previous_state') }}
    {%- if extract_type == 'full' %}
    left join rejected_keys
        on previous_state.keyhash = rejected_keys.keyhash
        {{- hashcdc._same_member(member, 'previous_state', 'rejected_keys') }}
    {%- endif %}
),

reshaped as (
    {#- is_reshaped: the hashes differ only because the table's shape changed (a column
        added, removed or widened since the previous version was seen). #}
    select
        compared.*,
        incoming_nonkeyhash != previous_nonkeyhash
        and {{ hashcdc._only_shape_differs_of(
            'incoming_row', member, member_changes, shape_changes, business_date) }}
            as is_reshaped
    from compared
),

operations_tagged as (
    select
        {{ member ~ ',' if member }}
        case
            when previous_keyhash is null then 'I'
            when incoming_keyhash is null and is_rejected_key then 'X'
            when incoming_keyhash is null then '{{ missing_operation }}'
            when incoming_nonkeyhash != previous_nonkeyhash and not is_reshaped then 'U'
            else 'N'
        end as operation,
        coalesce(incoming_keyhash, previous_keyhash) as keyhash,
        incoming_nonkeyhash,
        previous_nonkeyhash,
        previous_eff_start_date,
        previous_seen_date,
        is_reshaped,
        incoming_row
    from reshaped
),

written as (
    select
        {{ member ~ ',' if member }}
        if(operation in ('D', 'X'), null, incoming_row) as state_row,
        keyhash,
        coalesce(incoming_nonkeyhash, previous_nonkeyhash) as nonkeyhash,
        operation,
        if(
            operation in ('I', 'U', 'D'), date'{{ business_date }}', previous_eff_start_date
        ) as eff_start_date,
        if(operation = 'X', previous_seen_date, date'{{ business_date }}') as seen_date
    from operations_tagged
    {%- if extract_type == 'full' %}
    where operation != 'N' or is_reshaped
    {%- else %}
    where operation != 'X'
    {%- endif %}
),

operation_counts as (
    {%- if extract_type == 'delta' %}
    {{ hashcdc._operation_counts(
        'operations_tagged', 'previous_nonkeyhash',
        previous_rows="coalesce(max(operation_counts['state_rows_before']"
            ~ " + operation_counts['I'] - operation_counts['D']), 0)",
        previous_counts='previous_counts', members=members) }}
    {%- else %}
    {{ hashcdc._operation_counts('operations_tagged', 'previous_nonkeyhash', members=members) }}
    {%- endif %}
),

{%- set guarded = [] -%}
{%- for name, fraction in (members or {}).items() if extract_type == 'full' and hashcdc._guards_deletes(fraction) -%}
    {%- do guarded.append(name) -%}
{%- endfor -%}
{%- set refuses_members = guarded | length > 0 %}
{%- if refuses_members %}

member_counts as (
    {#- A member's counts, and whether the delete guard refuses its date. #}
    select
        {{ member }},
        counts,
        case {{ member }}
            {%- for name in guarded %}
            when '{{ name }}' then {{ hashcdc.deletes_too_many('counts', members[name]) }}
            {%- endfor %}
            else false
        end as is_refused
    from operation_counts
),
{%- endif %}

final as (
    select
        {{ member ~ ',' if member }}
        {{ hashcdc._column_list(columns, 'state_row') }},
        keyhash,
        nonkeyhash,
        operation,
        eff_start_date,
        seen_date,
        date'{{ business_date }}' as business_date,
        cast(null as map<string, bigint>) as operation_counts
    from written
    {%- if refuses_members %}
    where {{ member }} not in (select {{ member }} from member_counts where is_refused)
    {%- endif %}
    union all
    select
        {{ member ~ ',' if member }}
        {{ hashcdc._null_columns(columns) }},
        null as keyhash,
        null as nonkeyhash,
        {{ "if(is_refused, 'R', 'W')" if refuses_members else "'W'" }} as operation,
        null as eff_start_date,
        null as seen_date,
        date'{{ business_date }}' as business_date,
        {%- if extract_type == 'full' and member %}
        counts as operation_counts
        {%- elif extract_type == 'full' %}
        {{ hashcdc.assert_no_mass_delete(
            'counts', table_name, business_date, max_delete_fraction) }} as operation_counts
        {%- else %}
        counts as operation_counts
        {%- endif %}
    from {{ 'member_counts' if refuses_members else 'operation_counts' }}
)

select * from final
{% endmacro %}


{% macro _null_columns(columns) %}
    {#- `null as <column>` for each column: a bookkeeping row's payload. -#}
    {%- set nulls = [] -%}
    {%- for column in columns -%}
        {%- do nulls.append('null as ' ~ adapter.quote(column)) -%}
    {%- endfor -%}
    {{ return(nulls | join(',\n        ')) }}
{% endmacro %}


{% macro _previous_seen_date(extract_type, previous_date) %}
    {#- The date a previous row's values were last supplied. Unchanged keys of a full
        extract are not written, so theirs is the previous date, unless the previous date
        wrote the key as X (its row rejected then); a delta writes every key it supplies. -#}
    {%- if extract_type == 'full' and previous_date is not none -%}
        {{ return(
            "if(previous_state.operation = 'X' and previous_state.business_date = date'"
            ~ previous_date ~ "', previous_state.seen_date, date'" ~ previous_date ~ "')") }}
    {%- endif -%}
    {{ return('previous_state.seen_date') }}
{% endmacro %}


{% macro _operation_counts(tagged, previous_hash_column, previous_rows=none, previous_counts=none, members=none) %}
    {#- One row, one column `counts`: the date's rows per operation, and the rows of the
        previous state (those with a previous hash), as the W row records them.
        previous_rows: an aggregate of `previous_counts` (the previous W rows) giving the
        previous state's rows, when `tagged` holds only the keys the date supplied (a
        delta): X is then the rest. members (a group's): one row per member (`table_name`,
        `counts`), a member without rows too, each with its own previous W row. -#}
    {%- set previous_rows = previous_rows if previous_rows is none or members is not none
        else '(select ' ~ previous_rows ~ ' from ' ~ previous_counts ~ ')' -%}
    {%- if previous_rows is none -%}
        {%- set not_supplied = "count_if(operation = 'X')" -%}
        {%- set before = 'count(' ~ previous_hash_column ~ ')' -%}
    {%- else -%}
        {%- set not_supplied = previous_rows ~ " - count_if(operation in ('U', 'N', 'D'))" -%}
        {%- set before = previous_rows -%}
    {%- endif %}
    select
        {{ 'members.table_name,' if members is not none }}
        map(
            'I', count_if(operation = 'I'),
            'U', count_if(operation = 'U'),
            'D', count_if(operation = 'D'),
            'X', {{ not_supplied }},
            'N', count_if(operation = 'N'),
            'state_rows_before', {{ before }}
        ) as counts
    {%- if members is not none %}
    from (values ('{{ members | list | join("'), ('") }}')) as members (table_name)
    left join {{ tagged }}
        on {{ tagged }}.table_name = members.table_name
    {%- if previous_counts is not none %}
    left join {{ previous_counts }}
        on {{ previous_counts }}.table_name = members.table_name
    {%- endif %}
    group by members.table_name
    {%- else %}
    from {{ tagged }}
    {%- endif %}
{% endmacro %}


{% macro _same_member(member, left, right) %}
    {#- The join condition's part that keeps a group's keys within their member. -#}
    {%- if member is none -%}
        {{ return('') }}
    {%- endif -%}
    {{ return('\n        and ' ~ left ~ '.' ~ member ~ ' = ' ~ right ~ '.' ~ member) }}
{% endmacro %}


{% macro _of_members(members, first=false) %}
    {#- The filter that keeps a group's rows to the members the date runs (` and …`, or
        the condition alone when first). -#}
    {%- if members is none -%}
        {{ return('') }}
    {%- endif -%}
    {%- set condition = "table_name in ('" ~ members | list | join("', '") ~ "')" -%}
    {{ return(' ' ~ condition if first else '\n        and ' ~ condition) }}
{% endmacro %}
