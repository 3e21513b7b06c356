"""Cross-tier reports: the lake's runs joined with the catalog's prices, SLO best points, frontier."""
