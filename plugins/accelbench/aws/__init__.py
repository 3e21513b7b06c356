"""Typed access to the AWS APIs the suite reads: Pricing, spot price history, EC2 instance types."""
