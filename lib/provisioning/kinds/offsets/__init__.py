"""Offset resets as requests, applied once: a group's committed offsets on a topic moved to
a planned target (or removed), only while the group has no member, each request at most
once."""
