"""The pairs stage: contrastive training pairs and the held-out evaluation set."""
