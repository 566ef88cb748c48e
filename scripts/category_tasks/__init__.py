"""The builders of the behaviour-category task sets (scripts/make_category_tasks.py): one module per set."""
