"""Model runners: execute one forward step of a compiled artifact on a device."""
