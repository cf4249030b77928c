"""A running query's live step (``step``: one micro-batch through the scan, the operators and the
release, with the state carried between steps), the window partials it keeps instead of events
(``partials``) and what the state may forget once CTIs pass (``retention``)."""
