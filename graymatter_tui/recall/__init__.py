"""Recall: ranking an agent's live facts for a query, and explaining the ranking."""
