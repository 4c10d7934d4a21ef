"""The validate stage: pandera contracts (blocking) and the Great Expectations report."""
