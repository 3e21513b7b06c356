"""Planning a campaign: a request becomes a validated matrix of BenchmarkSpecs, or every problem at once."""
