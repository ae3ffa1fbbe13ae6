"""Moving memory in and out: export and import, the demo store, migration between
backends."""
