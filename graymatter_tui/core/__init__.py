"""The domain core: the typed records, errors, clock, text safety, provenance, receipts
and text analysis every layer shares. Nothing here does I/O or imports another layer."""
