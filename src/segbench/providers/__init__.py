"""Language and image-editing backends behind small protocols: OpenAI (or any OpenAI-compatible
server) and the offline WordNet / Pillow backends, with a content-addressed response cache."""
