"""The train stage: fine-tune the base model on the validated pairs."""
