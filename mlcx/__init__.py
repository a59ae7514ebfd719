"""mlcx: compile LLMs with Apache TVM and run them on every device."""

__version__ = "0.1.0"
