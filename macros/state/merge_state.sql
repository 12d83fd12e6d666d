{% macro merge_state(target, source) %}
{#- Apply a date's rows (cdc_state, cdc_feed_state) to the state in one commit. Data rows
    match by keyhash, bookkeeping rows among themselves: W the W row, P rows by partition
    (their keyhash), a feed's A rows by event id (a truncate's A row has no key, as the W
    row and the P rows' floor: it must not match them). D deletes a key and `a` an A row;
    X marks a kept key (operation and date
    only); N with the same hash records that the key was supplied (operation and dates:
    its effective date is the one before the date, which a run that closes a streamed
    date on top of its micro-batches puts back; the payload stays, as in the article);
    anything else replaces the row or adds it; R (a group's member refused by the
    delete guard: its counts, for the state's post-hook) is never written. A table group's state (model config
    hashcdc_group) matches every row within its member (`table_name`) as well. -#}
{%- set columns = adapter.get_columns_in_relation(target) | map(attribute='name') | list -%}
{%- set touched = ['operation', 'business_date', 'seen_date', 'eff_start_date'] + (
    ['event_sequence'] if 'event_sequence' in columns else []) -%}
merge into {{ target }} as target
using {{ source }} as source
on
    target.keyhash <=> source.keyhash
    and (target.operation in ('W', 'A', 'P')) = (source.operation in ('W', 'A', 'a', 'P'))
    and (target.operation = 'W') = (source.operation = 'W')
    and (target.operation = 'P') = (source.operation = 'P')
    and (target.operation != 'A' or target.nonkeyhash = source.nonkeyhash)
    {%- if config.get('hashcdc_group') %}
    and target.table_name = source.table_name
    {%- endif %}
when matched and source.operation in ('D', 'a') then delete
when matched and source.operation = 'X' then update set
    target.operation = source.operation,
    target.business_date = source.business_date
when matched and source.operation = 'N' and target.nonkeyhash <=> source.nonkeyhash then update set
    {%- for column in touched %}
    target.{{ adapter.quote(column) }} = source.{{ adapter.quote(column) }}{{ ',' if not loop.last }}
    {%- endfor %}
when matched then update set
    {%- for column in columns %}
    target.{{ adapter.quote(column) }} = source.{{ adapter.quote(column) }}{{ ',' if not loop.last }}
    {%- endfor %}
when not matched and source.operation not in ('D', 'a', 'X', 'R') then insert (
    {%- for column in columns %}
    {{ adapter.quote(column) }}{{ ',' if not loop.last }}
    {%- endfor %}
) values (
    {%- for column in columns %}
    source.{{ adapter.quote(column) }}{{ ',' if not loop.last }}
    {%- endfor %}
)
{% endmacro %}
