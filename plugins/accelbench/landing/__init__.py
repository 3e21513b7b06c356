"""What a campaign's run lands in the lake, as the campaign DAG's tasks call it: each spec's raw evidence
into tables (`ingest`), then the campaign's summary with its quality and costs (`summary`); a load search's
capacity in words (`capacity`) for both their logs. Above `report` in the layers: the words are the
report's."""
