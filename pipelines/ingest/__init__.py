"""The ingest stage: harvest new papers (arXiv or the offline mirror) into the raw store."""
