"""The ``mathembed`` command: the one package above both ``pipelines`` (the stages and their
commands) and ``flows`` (the Prefect flows and theirs), so neither imports the other upward.
It holds no logic: :mod:`mathembed.cli` puts the two command sets on one app."""
