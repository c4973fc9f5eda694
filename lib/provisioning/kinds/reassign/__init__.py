"""Replica moves (KIP-455): a topic's replication factor or replica placement changed in
place, rack-aware and throttled; a kind that extends the topics' rows."""
