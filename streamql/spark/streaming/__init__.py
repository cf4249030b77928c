"""A running query's live step (``step``: one micro-batch through the scan, the operators and the
release), the state carried between steps and its commit under the checkpoint (``state``), the
window partials kept instead of events (``partials``) and what the state may forget once CTIs
pass (``retention``)."""
