"""The notebook step: which notebook and cells, their conversion to a script, what the code
does and needs (imports, files, requirements)."""
