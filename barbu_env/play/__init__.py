"""A person at the table: the terminal seat and the browser table (the web server). Imports every
layer below it."""
