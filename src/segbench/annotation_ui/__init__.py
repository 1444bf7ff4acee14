"""Human annotation rounds: Label Studio label configs, the one client that talks HTTP to Label
Studio, converters between its task/annotation JSON and segbench records, and round records."""
