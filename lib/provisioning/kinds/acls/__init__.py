"""ACL bindings (KIP-4's ACL admin requests): granted, revoked, read back."""

# What the kinds registered after ACL bindings may import of them: the reader of each
# cluster's live bindings.
OFFERS = ("requests",)
