"""The ``barbu`` command line: the commands. The top layer."""
