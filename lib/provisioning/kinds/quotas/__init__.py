"""Client quotas (KIP-546): set and removed, validateOnly first, read back."""
