"""People: who signs in (users, passwords, browser sessions, personal API keys) and what each may
do (``access``: the one place that decides)."""
