"""The backends, side by side: `lmdb` (embedded, the default) and `postgres` (a database
a team shares). Neither imports the other; `opening.open_location` chooses."""
