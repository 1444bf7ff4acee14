"""CAFE's image-edit backends: the offline Pillow compositor, OpenAI's image edits, and what they share."""
