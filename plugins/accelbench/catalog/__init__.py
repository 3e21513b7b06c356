"""The catalog database: instance types, price history, runtime versions, retractions."""
