"""Valid vocabularies in the demo: generated captions."""
