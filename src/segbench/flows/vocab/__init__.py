"""The valid vocabularies' Prefect flows: the build and the Lexical Alignment Curve evaluation."""
