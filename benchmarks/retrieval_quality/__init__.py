"""The recall-quality gate: does consolidation lose what recall should still find?"""
