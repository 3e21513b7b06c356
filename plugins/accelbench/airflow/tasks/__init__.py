"""Task bodies, one module per concern; a DAG file's task imports the body it runs from here."""
