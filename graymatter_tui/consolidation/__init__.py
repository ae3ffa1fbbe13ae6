"""The consolidation engine: staged cycle, review, coverage guard, summarisers."""
