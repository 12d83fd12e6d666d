{% test members_applied(model, group) %}
{#-
    The members of a table group that the business date being run did not apply because
    the group's stage refused them (no extract, another header, rejects above the limits,
    a key twice) or its state's delete guard did: one failing row each, naming the
    table, the date and why. Their
    siblings were committed; a refused member's previous state is as it was. On the
    group's history, the date's last model, so that nothing of the siblings' date is
    skipped when it fails.
-#}
{%- set refused = hashcdc.refused_members(group) -%}
{%- if refused %}
select table_name, business_date, reason
from (values
    {%- for name, reason in refused.items() %}
    ('{{ name }}', date'{{ hashcdc.business_date() }}', {{ hashcdc._sql_text(reason) }}){{ ',' if not loop.last }}
    {%- endfor %}
) as refused (table_name, business_date, reason)
{%- else %}
select
    cast(null as string) as table_name,
    cast(null as date) as business_date,
    cast(null as string) as reason
where false
{%- endif %}
{% endtest %}
