"""Bulk Kafka topic provisioning and auditing on Spark."""

__version__ = "0.1.0"
