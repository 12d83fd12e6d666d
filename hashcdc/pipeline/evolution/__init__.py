"""Schema evolution.

Tables brought to the config's shape before a date is run, and a feed's schema-change
events held against the evolution rules.
"""
