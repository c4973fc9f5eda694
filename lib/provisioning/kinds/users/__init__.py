"""SCRAM credentials (KIP-554): upserted and deleted, read back."""
