"""The Parquet lake: raw loadgen output, `requests` and `runs` tables, reports; local or s3://."""
