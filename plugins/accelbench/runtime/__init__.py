"""Server recipes per tier: image, version source, arguments and environment."""
