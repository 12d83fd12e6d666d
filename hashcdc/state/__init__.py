"""The tables once written.

Delta versions and the date each applied, compaction and retention, upgrades of earlier
layouts, replay, the audit of runs and the report.
"""
