"""Everything that reads results: pure functions of the results dicts they are handed (they open
no file), from which chapters print tables, verdicts and claim lines."""
